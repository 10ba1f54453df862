package webhook_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/testdb"
	"github.com/certorder/certorder/sqlite"
	"github.com/certorder/certorder/storetest"
	"github.com/certorder/certorder/webhook"
)

// order.expiring counts to the certificate's end and is sent while the
// order has no issued renewal; order.plan_ending counts to the plan's end
// and is sent while it has no renewal at all; each once per end and
// threshold (the nearest crossed), with the next step; a reissued
// certificate's new end is told afresh. The worker runs on a fixed clock
// against a real SQLite store, and the receiver checks every signature
// with the Standard Webhooks reference library.
func TestEndingEvents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, err := sqlite.Open(ctx, testdb.SQLite(t))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if _, err := store.AddMember(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []string
	var verifier *standardwebhooks.Webhook
	rc := startReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		// The worker's clock is a year ahead: the signature, not the time.
		if err := verifier.VerifyIgnoringTimestamp(body, r.Header); err != nil {
			t.Errorf("signature: %v", err)
		}
		var ev struct {
			Type string          `json:"type"`
			Data json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(body, &ev); err != nil {
			t.Error(err)
		}
		mu.Lock()
		got = append(got, ev.Type+" "+string(ev.Data))
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})
	secret, err := webhook.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	if verifier, err = standardwebhooks.NewWebhook(secret); err != nil {
		t.Fatal(err)
	}
	if _, err := store.AddEndpoint(ctx, "alice", certorder.Endpoint{URL: rc.URL + "/hook", Secret: secret}); err != nil {
		t.Fatal(err)
	}
	// At 2027-01-01: 1's plan ends in 59 days, without a renewal; 2's too,
	// renewed by 3 (pending); 4's certificate ends in 19 days in a long
	// plan; 5's in 10, renewed by 6 (issued); 7's in 10, renewed by 8
	// (pending).
	doc := func(id int64, from, till, plan string) string {
		return storetest.CertJSON(id, id*10, fmt.Sprintf("0A%02d", id), from, till, plan)
	}
	renewed := func(doc string, by int64) string {
		return strings.Replace(doc, `"status":"issued","validity_years"`,
			fmt.Sprintf(`"status":"issued","is_renewed":true,"was_renewed_by_order_id":%d,"validity_years"`, by), 1)
	}
	pending := storetest.PendingJSON
	if _, err := store.ImportOrders(ctx, "alice", storetest.Orders(t,
		doc(1, "2026-08-05", "2027-02-20", "2027-03-01"),
		renewed(doc(2, "2026-08-05", "2027-02-20", "2027-03-01"), 3), pending(3, "pending"),
		doc(4, "2026-07-05", "2027-01-20", "2029-03-01"),
		renewed(doc(5, "2026-06-26", "2027-01-11", "2027-01-11"), 6), doc(6, "2026-12-20", "2027-07-07", "2028-01-11"),
		renewed(doc(7, "2026-06-26", "2027-01-11", "2027-01-11"), 8), pending(8, "pending"),
	)); err != nil {
		t.Fatal(err)
	}
	tick := func(day string) []string {
		t.Helper()
		now, _ := time.Parse(time.DateOnly, day)
		now = now.Add(9 * time.Hour)
		w := webhook.NewWorker(webhook.WorkerConfig{Store: store, Now: func() time.Time { return now },
			Client: webhook.NewHTTPClient(webhook.Options{AllowPrivate: true, Timeout: 5 * time.Second})})
		// The second round fans out and delivers what the first recorded.
		for range 2 {
			if err := w.Tick(ctx); err != nil {
				t.Fatal(err)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		out := slices.Sorted(slices.Values(got))
		got = nil
		return out
	}
	want := func(day string, events ...string) {
		t.Helper()
		if got := tick(day); !slices.Equal(got, events) {
			t.Errorf("%s: events\n%s\nwant\n%s", day, strings.Join(got, "\n"), strings.Join(events, "\n"))
		}
	}
	want("2027-01-01",
		`order.expiring {"order_id":4,"valid_till":"2027-01-20","days_remaining":19,"order_valid_till":"2029-03-01","next_step":"reissue"}`,
		`order.expiring {"order_id":7,"valid_till":"2027-01-11","days_remaining":10,"order_valid_till":"2027-01-11","next_step":"issue_renewal"}`,
		`order.plan_ending {"order_id":1,"order_valid_till":"2027-03-01","days_remaining":59,"valid_till":"2027-02-20","next_step":"renew"}`,
	)
	want("2027-01-01") // told already
	want("2027-01-02") // no threshold crossed since
	want("2027-01-14",
		`order.expiring {"order_id":4,"valid_till":"2027-01-20","days_remaining":6,"order_valid_till":"2029-03-01","next_step":"reissue"}`,
	)
	// The plan goes on past 1's certificate: reissue is its next step,
	// even as its plan's end comes near; 2's renewal is not issued yet.
	want("2027-01-30",
		`order.expiring {"order_id":1,"valid_till":"2027-02-20","days_remaining":21,"order_valid_till":"2027-03-01","next_step":"reissue"}`,
		`order.expiring {"order_id":2,"valid_till":"2027-02-20","days_remaining":21,"order_valid_till":"2027-03-01","next_step":"issue_renewal"}`,
		`order.plan_ending {"order_id":1,"order_valid_till":"2027-03-01","days_remaining":30,"valid_till":"2027-02-20","next_step":"reissue"}`,
	)
	// Order 4 reissued: its new end is told afresh when it comes near.
	if _, err := store.ImportOrders(ctx, "alice", storetest.Orders(t, storetest.CertJSON(4, 41, "0A41", "2027-01-18", "2027-08-05", "2029-03-01"))); err != nil {
		t.Fatal(err)
	}
	reissued := tick("2027-01-31")
	if len(reissued) != 1 || !strings.HasPrefix(reissued[0], `order.reissued {"order_id":4,"certificate":{"id":41,"serial_number":"0A41"`) {
		t.Errorf("the reissue: %v", reissued)
	}
	want("2027-07-10",
		`order.expiring {"order_id":4,"valid_till":"2027-08-05","days_remaining":26,"order_valid_till":"2029-03-01","next_step":"reissue"}`,
	)
}
