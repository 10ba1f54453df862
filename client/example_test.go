package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/certorder/certorder/client"
)

// The example of docs/MEMBERS.md, run against a stand-in for the service
// that knows order 10001, renewed by 10002.
func ExampleClient_Current() {
	service := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Action  string `json:"action"`
			OrderID int64  `json:"orderId"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		w.Header().Set("Content-Type", "application/json")
		switch {
		case req.Action == "RenewCheck" && req.OrderID == 10001:
			fmt.Fprint(w, `{"orderId":10001,"renewed_orderId":10002}`)
		case req.Action == "RenewCheck":
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"error_message":"Error(132) orderId is failed."}`)
		default:
			fmt.Fprint(w, `{"OrderId":10002,"certificate":{"common_name":"shop.example.com","valid_till":"2027-06-09","days_remaining":194},`+
				`"status":"issued","is_renewed":false,"order_valid_till":"2029-05-11"}`)
		}
	}))
	defer service.Close()

	ctx := context.Background()
	c, err := client.New(service.URL+"/api/digicert/", "acme-corp", "cok_0123456789ab_abcdefghijklmnopqrstuvwxyz234567abc")
	if err != nil {
		log.Fatal(err)
	}
	cur, err := c.Current(ctx, 10001) // follows RenewCheck to the newest order
	switch {
	case errors.Is(err, client.ErrCredentialsRejected):
		log.Fatal("key refused: ask the reseller for a new one")
	case err != nil:
		log.Fatal(err) // *client.APIError, *client.HTTPError, or a network error
	}
	fmt.Println(cur.Chain, cur.Order.OrderID, cur.Order.Certificate.ValidTill.Raw, cur.Order.OrderValidTill.Raw)
	// Output: [10001 10002] 10002 2027-06-09 2029-05-11
}
