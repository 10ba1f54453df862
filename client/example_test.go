package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"

	"github.com/certorder/certorder/client"
)

// The example of docs/MEMBERS.md; compiled by go test, not run (it needs a service).
func ExampleClient_Current() {
	ctx := context.Background()
	c, err := client.New(os.Getenv("CERTORDER_URL"), "acme-corp", os.Getenv("CERTORDER_ACCESS_KEY"))
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
	fmt.Println(cur.Chain, cur.Order.OrderID, cur.Order.Certificate.ValidTill.Time, cur.Order.Certificate.DaysRemaining.Value)
}
