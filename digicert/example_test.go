package digicert_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"time"

	"github.com/certorder/certorder/digicert"
	"github.com/certorder/certorder/digicert/digicerttest"
)

// Fetch an order from a simulated CertCentral and map it to the spec's
// order object.
func Example() {
	clock := digicerttest.NewClock(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
	sim := digicerttest.NewServer(digicerttest.Options{APIKey: "my-key", Clock: clock})
	ts := httptest.NewServer(sim)
	defer ts.Close()
	id, _ := sim.AddOrder(digicerttest.OrderSpec{ContainerID: 12345, CommonName: "shop.example.com"})
	sim.Issue(id, clock.Now().Add(-time.Hour))

	c, err := digicert.New(ts.URL+digicerttest.BasePath, "my-key", digicert.WithClock(clock.Now, clock.Sleep))
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	changes, err := c.StatusChangesSince(ctx, clock.Now().Add(-24*time.Hour))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, ch := range changes {
		o, err := c.OrderInfo(ctx, ch.OrderID)
		if err != nil {
			fmt.Println(err)
			return
		}
		doc, err := digicert.SpecOrder(o)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(o.ID, o.Status, o.Container.ID, len(doc) > 0)
	}
	fmt.Println(c.Stats().ByStatus[200], "requests answered 200")
	// Output:
	// 100001 issued 12345 true
	// 2 requests answered 200
}
