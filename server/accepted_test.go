package server_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
	"testing"

	"github.com/certorder/certorder/client"
	"github.com/certorder/certorder/internal/importfile"
	"github.com/certorder/certorder/internal/ordertest"
	"github.com/certorder/certorder/server"
)

// Whatever the import accepts, the Go client and the web page read: random
// documents in every variation the schema allows, imported, then fetched
// with the client over HTTP and shown on the web page.
func TestAcceptedOrdersReadEverywhere(t *testing.T) {
	t.Parallel()
	f, base := webFixture(t, server.Config{})
	r := rand.New(rand.NewPCG(3, 4))
	const n = 150
	var docs []string
	for i := range n {
		docs = append(docs, string(ordertest.RandomDocument(r, int64(50001+i))))
	}
	if _, err := f.store.ImportOrders(context.Background(), "alice",
		importfile.Decode(strings.NewReader("["+strings.Join(docs, ",")+"]"))); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(f.url, "alice", f.aliceKey)
	if err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, base, nil)
	if p := b.signIn("alice", f.aliceKey); p.status != 303 {
		t.Fatalf("sign-in: %d", p.status)
	}
	for i := range n {
		id := int64(50001 + i)
		if o, err := c.OrderInfo(context.Background(), id); err != nil || o.OrderID != id {
			t.Fatalf("client, order %d: %v\n%s", id, err, docs[i])
		}
		if p := b.get(fmt.Sprintf("/orders/%d", id)); p.status != 200 {
			t.Fatalf("web page of order %d: %d\n%s", id, p.status, docs[i])
		}
	}
	for page := 1; page <= (n+4+24)/25; page++ {
		if p := b.get("/orders?" + url.Values{"page": {fmt.Sprint(page)}}.Encode()); p.status != 200 {
			t.Fatalf("orders page %d: %d", page, p.status)
		}
	}
}
