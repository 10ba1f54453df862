package client_test

import (
	"io"
	"log"
	"net/http"
	"os"

	"github.com/certorder/certorder/client"
)

// A receiver for certorder's webhooks (docs/MEMBERS.md); compiled by go test, not run.
func ExampleVerifyWebhook() {
	secret := os.Getenv("CERTORDER_WEBHOOK_SECRET") // whsec_..., shown once when the endpoint was added
	http.HandleFunc("POST /certorder-hook", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		if err != nil {
			http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
			return
		}
		ev, err := client.VerifyWebhook(secret, r.Header, body) // the body exactly as received
		if err != nil {
			http.Error(w, "not a valid webhook", http.StatusUnauthorized)
			return
		}
		// ev.ID is the same on every retry: skip IDs already handled.
		if old, renewed, ok := ev.Renewed(); ok {
			log.Printf("order %d was renewed by order %d: point the ACME client at %d", old, renewed, renewed)
		}
		w.WriteHeader(http.StatusNoContent) // any 2xx: delivered; 410 Gone: stop sending
	})
	log.Fatal(http.ListenAndServe("127.0.0.1:9000", nil))
}
