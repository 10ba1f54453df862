package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/certorder/certorder/internal/storekit"
	"github.com/certorder/certorder/queue"
)

// testCertCentralWebhook: the last event and the challenge token are kept
// (a token only replaced by another), and the events' jobs coalesce by
// order as the receiver queues them.
func testCertCentralWebhook(t *testing.T, s storekit.Store) {
	ctx := context.Background()
	w, err := s.CertCentralWebhook(ctx)
	if err != nil || w != (storekit.CertCentralWebhook{}) {
		t.Fatalf("a new store: %+v, %v; want nothing", w, err)
	}
	at := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	for _, ev := range []storekit.CertCentralEvent{
		{Event: "test_webhook_endpoint", At: at},
		{Event: "challenge_webhook_endpoint", At: at.Add(time.Second), Token: "tok-1", WebhookID: 77},
		{Event: "certificate_revoked", OrderID: 100006, At: at.Add(2 * time.Second)},
	} {
		if err := s.RecordCertCentralEvent(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	w, err = s.CertCentralWebhook(ctx)
	want := storekit.CertCentralWebhook{LastEvent: "certificate_revoked", LastOrderID: 100006, LastEventAt: at.Add(2 * time.Second),
		ChallengeToken: "tok-1", ChallengeWebhookID: 77, ChallengeAt: at.Add(time.Second)}
	if err != nil || !w.LastEventAt.Equal(want.LastEventAt) || !w.ChallengeAt.Equal(want.ChallengeAt) {
		t.Fatalf("got %+v, %v; want %+v", w, err, want)
	}
	w.LastEventAt, w.ChallengeAt = want.LastEventAt, want.ChallengeAt
	if w != want {
		t.Errorf("got %+v, want %+v", w, want)
	}

	// Copies of an order's event wait as one job; once claimed, a copy
	// makes a new one. Jobs lists an order's, newest first.
	job := queue.Job{Kind: queue.KindCertCentralEvent, SubjectID: 100006, Key: "100006", Payload: []byte(`{}`)}
	a, err := s.Enqueue(ctx, job, job)
	if err != nil || len(a) != 2 || a[0] != a[1] {
		t.Fatalf("two copies: %v, %v; want one job", a, err)
	}
	claimed, err := s.ClaimJobs(ctx, queue.Claim{Kinds: []string{queue.KindCertCentralEvent}, Owner: "t", At: time.Now(), Lease: time.Minute, Limit: 10})
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claimed %v, %v", claimed, err)
	}
	b, err := s.Enqueue(ctx, job)
	if err != nil || b[0] == a[0] {
		t.Fatalf("a copy during the claim: %v, %v; want a new job", b, err)
	}
	jobs, err := s.Jobs(ctx, queue.List{Kind: queue.KindCertCentralEvent, SubjectID: 100006, Limit: 10})
	if err != nil || len(jobs) != 2 || jobs[0].ID != b[0] {
		t.Errorf("the order's jobs: %v, %v", jobs, err)
	}

	// The receiver records an event and queues its job in one call: another
	// order's job is added, a copy joins the pending job, and the event is
	// the last one.
	other := queue.Job{Kind: queue.KindCertCentralEvent, SubjectID: 100008, Key: "100008", Payload: []byte(`{}`)}
	for _, c := range []struct {
		ev  storekit.CertCentralEvent
		job queue.Job
	}{
		{storekit.CertCentralEvent{Event: "order_rejected", OrderID: 100008, At: at.Add(3 * time.Second)}, other},
		{storekit.CertCentralEvent{Event: "certificate_issued", OrderID: 100006, At: at.Add(4 * time.Second)}, job},
	} {
		if err := s.RecordCertCentralEvent(ctx, c.ev, c.job); err != nil {
			t.Fatal(err)
		}
	}
	if jobs, err := s.Jobs(ctx, queue.List{Kind: queue.KindCertCentralEvent, SubjectID: 100008, Limit: 10}); err != nil || len(jobs) != 1 {
		t.Errorf("the event's job: %v, %v; want one", jobs, err)
	}
	if jobs, err := s.Jobs(ctx, queue.List{Kind: queue.KindCertCentralEvent, SubjectID: 100006, Limit: 10}); err != nil || len(jobs) != 2 || jobs[0].ID != b[0] {
		t.Errorf("a copy while one waits: %v, %v; want it joined", jobs, err)
	}
	if w, err := s.CertCentralWebhook(ctx); err != nil || w.LastEvent != "certificate_issued" || w.LastOrderID != 100006 {
		t.Errorf("the last event: %+v, %v", w, err)
	}
}
