package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/storekit"
	"github.com/certorder/certorder/queue"
	"github.com/certorder/certorder/webhook"
)

// The member's own webhook calls: each works on the member's endpoint and
// delivery, and finds nothing, exactly like a missing ID, for another
// member's; a refused call changes nothing.
func testMemberWebhooks(t *testing.T, s storekit.Store) {
	ctx := context.Background()
	alice, err := s.AddMember(ctx, "alice")
	must(t, err)
	bob, err := s.AddMember(ctx, "bob")
	must(t, err)
	mine, err := s.AddEndpoint(ctx, "alice", certorder.Endpoint{URL: "https://a.example/hook", Secret: "whsec_a"})
	must(t, err)
	theirs, err := s.AddEndpoint(ctx, "bob", certorder.Endpoint{URL: "https://b.example/hook", Secret: "whsec_b"})
	must(t, err)
	const missing = int64(1 << 40)

	// Finding: one's own, never another's.
	ep, err := s.MemberEndpoint(ctx, alice.ID, mine.ID)
	must(t, err)
	if ep.ID != mine.ID || ep.URL != mine.URL || ep.Member != "alice" || !ep.Enabled {
		t.Fatalf("MemberEndpoint = %+v", ep)
	}
	for _, id := range []int64{theirs.ID, missing} {
		_, err := s.MemberEndpoint(ctx, alice.ID, id)
		wantErr(t, err, certorder.ErrNotFound)
	}

	// A test message: a job of the member for its endpoint (the page
	// finds the endpoint with MemberEndpoint first; the worker checks the
	// endpoint is still the member's when it sends).
	ids, err := s.Enqueue(ctx, webhook.NewDelivery(mine, "webhook.test", "msg_mine", []byte(`{"type":"webhook.test"}`)),
		webhook.NewDelivery(theirs, "webhook.test", "msg_theirs", []byte(`{}`)))
	must(t, err)
	did, theirDelivery := ids[0], ids[1]
	if ds := memberDeliveries(t, s, theirs.MemberID, theirs.ID); len(ds) != 1 || ds[0].MsgID != "msg_theirs" {
		t.Fatalf("bob's deliveries: %+v", ds)
	}

	// Deliveries: one's own endpoint's; none of another's.
	ds := memberDeliveries(t, s, alice.ID, mine.ID)
	if len(ds) != 1 || ds[0].ID != did || ds[0].EventType != "webhook.test" || ds[0].State != webhook.StatePending {
		t.Fatalf("MemberDeliveries = %+v", ds)
	}
	if ds := memberDeliveries(t, s, alice.ID, theirs.ID); len(ds) != 0 {
		t.Fatalf("alice lists bob's deliveries: %+v", ds)
	}

	// Redelivery: not while pending; once finished, again at once with the
	// same message ID; never another member's, nor through another endpoint.
	wantErr(t, s.RetryJob(ctx, queue.KindWebhook, alice.ID, mine.ID, did), certorder.ErrConflict)
	at := time.Now().UTC().Truncate(time.Microsecond)
	for _, j := range claimDeliveries(t, s, time.Now().Add(time.Second), 10) {
		finish(t, s, queue.Outcome{JobID: j.ID, At: at, Error: "oops", State: queue.Failed})
	}
	for _, c := range []struct{ endpoint, delivery int64 }{
		{theirs.ID, theirDelivery}, {mine.ID, theirDelivery}, {theirs.ID, did}, {mine.ID, missing}, {missing, did},
	} {
		wantErr(t, s.RetryJob(ctx, queue.KindWebhook, alice.ID, c.endpoint, c.delivery), certorder.ErrNotFound)
	}
	wantErr(t, s.RetryJob(ctx, queue.KindNoticeEvent, alice.ID, mine.ID, did), certorder.ErrNotFound) // another kind
	if due := claimDeliveries(t, s, time.Now().Add(time.Second), 10); len(due) != 0 {
		t.Fatalf("a refused redelivery queued something: %+v", due)
	}
	must(t, s.RetryJob(ctx, queue.KindWebhook, alice.ID, mine.ID, did))
	due := claimDeliveries(t, s, time.Now().Add(time.Second), 10)
	if len(due) != 1 || due[0].ID != did || due[0].MsgID != "msg_mine" || due[0].Attempts != 0 {
		t.Fatalf("redelivered: %+v", due)
	}

	// Disable and enable: one's own; a refused call changes nothing.
	for _, id := range []int64{theirs.ID, missing} {
		wantErr(t, s.SetMemberEndpointEnabled(ctx, alice.ID, id, false, "by the member"), certorder.ErrNotFound)
	}
	if ep, err := s.FindEndpoint(ctx, theirs.ID); err != nil || !ep.Enabled {
		t.Fatalf("bob's endpoint after alice tried to disable it: %+v %v", ep, err)
	}
	finish(t, s, queue.Outcome{JobID: did, At: at, State: queue.Pending, RunAfter: at.Add(time.Hour)})
	must(t, s.RecordEndpointAttempt(ctx, mine.ID, at, false, ""))
	must(t, s.SetMemberEndpointEnabled(ctx, alice.ID, mine.ID, false, "by the member"))
	ep, err = s.MemberEndpoint(ctx, alice.ID, mine.ID)
	must(t, err)
	if ep.Enabled || ep.DisabledReason != "by the member" || !ep.FailingSince.Equal(at) {
		t.Fatalf("disabled: %+v", ep)
	}
	must(t, s.SetMemberEndpointEnabled(ctx, alice.ID, mine.ID, true, "ignored"))
	ep, err = s.MemberEndpoint(ctx, alice.ID, mine.ID)
	must(t, err)
	if !ep.Enabled || ep.DisabledReason != "" || !ep.FailingSince.IsZero() {
		t.Fatalf("enabled again: %+v", ep)
	}

	// Delete: one's own, with its deliveries; another's stays.
	for _, id := range []int64{theirs.ID, missing} {
		wantErr(t, s.DeleteMemberEndpoint(ctx, alice.ID, id), certorder.ErrNotFound)
	}
	must(t, s.DeleteMemberEndpoint(ctx, alice.ID, mine.ID))
	_, err = s.MemberEndpoint(ctx, alice.ID, mine.ID)
	wantErr(t, err, certorder.ErrNotFound)
	wantErr(t, s.DeleteMemberEndpoint(ctx, alice.ID, mine.ID), certorder.ErrNotFound)
	if ds := memberDeliveries(t, s, alice.ID, mine.ID); len(ds) != 0 {
		t.Fatalf("deliveries of a deleted endpoint: %+v", ds)
	}
	if ds := memberDeliveries(t, s, theirs.MemberID, theirs.ID); len(ds) != 1 {
		t.Fatalf("bob's deliveries after alice's endpoint was deleted: %+v", ds)
	}
	if eps, err := s.Endpoints(ctx, "bob"); err != nil || len(eps) != 1 || eps[0].ID != theirs.ID {
		t.Fatalf("bob's endpoints after alice's deletions: %+v %v", eps, err)
	}
	// Bob reaches his own with his own ID, and alice's ID is nothing to him.
	if _, err := s.MemberEndpoint(ctx, bob.ID, theirs.ID); err != nil {
		t.Fatal(err)
	}
	_, err = s.MemberEndpoint(ctx, bob.ID, mine.ID)
	wantErr(t, err, certorder.ErrNotFound)
}
