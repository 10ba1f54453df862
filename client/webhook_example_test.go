package client_test

import (
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"time"

	"github.com/certorder/certorder/client"
)

// receiver is a receiver for certorder's webhooks (docs/MEMBERS.md).
func receiver(secret string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
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
			fmt.Printf("order %d was renewed by order %d: point the ACME client at %d\n", old, renewed, renewed)
		}
		if id, cert, prev, ok := ev.Reissued(); ok {
			fmt.Printf("order %d has certificate %s in place of %s: install it\n", id, cert.SerialNumber, prev.SerialNumber)
		}
		w.WriteHeader(http.StatusNoContent) // any 2xx: delivered; 410 Gone: stop sending
	}
}

// The receiver, given two webhooks signed as certorder signs them, and a
// forged one.
func ExampleVerifyWebhook() {
	secret := "whsec_" + base64.StdEncoding.EncodeToString([]byte("a secret of 24 bytes or more")) // shown once when the endpoint was added
	handle := receiver(secret)
	send := func(id, body, signWith string) {
		key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(signWith, "whsec_"))
		ts := strconv.FormatInt(time.Now().Unix(), 10)
		r := httptest.NewRequest(http.MethodPost, "/certorder-hook", strings.NewReader(body))
		r.Header.Set("webhook-id", id)
		r.Header.Set("webhook-timestamp", ts)
		r.Header.Set("webhook-signature", "v1,"+base64.StdEncoding.EncodeToString(client.WebhookMAC(key, id, ts, []byte(body))))
		w := httptest.NewRecorder()
		handle(w, r)
		fmt.Println(w.Code)
	}
	send("msg_1", `{"type":"order.renewed","timestamp":"2026-11-27T10:00:00Z","data":{"order_id":10001,"renewed_order_id":10002}}`, secret)
	send("msg_2", `{"type":"order.reissued","timestamp":"2026-11-27T10:00:00Z","data":{"order_id":10003,`+
		`"certificate":{"id":530003,"serial_number":"0A2"},"previous_certificate":{"id":520003,"serial_number":"0A1"}}}`, secret)
	send("msg_3", `{"type":"order.renewed","timestamp":"2026-11-27T10:00:00Z","data":{}}`,
		"whsec_"+base64.StdEncoding.EncodeToString([]byte("another secret, not ours!")))
	// Output:
	// order 10001 was renewed by order 10002: point the ACME client at 10002
	// 204
	// order 10003 has certificate 0A2 in place of 0A1: install it
	// 204
	// 401
}
