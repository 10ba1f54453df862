package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/storekit"
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

	// A test message: queued to one's own endpoint only.
	did, err := s.QueueMemberDelivery(ctx, alice.ID, mine.ID, "webhook.test", "msg_mine", []byte(`{"type":"webhook.test"}`))
	must(t, err)
	for _, id := range []int64{theirs.ID, missing} {
		_, err := s.QueueMemberDelivery(ctx, alice.ID, id, "webhook.test", "msg_x", []byte(`{}`))
		wantErr(t, err, certorder.ErrNotFound)
	}
	theirDelivery, err := s.QueueMemberDelivery(ctx, theirs.MemberID, theirs.ID, "webhook.test", "msg_theirs", []byte(`{}`))
	must(t, err)
	if ds, err := s.MemberDeliveries(ctx, theirs.MemberID, theirs.ID, 10); err != nil || len(ds) != 1 || ds[0].MsgID != "msg_theirs" {
		t.Fatalf("bob's deliveries after alice's refused test messages: %+v %v", ds, err)
	}

	// Deliveries: one's own endpoint's; none of another's.
	ds, err := s.MemberDeliveries(ctx, alice.ID, mine.ID, 20)
	must(t, err)
	if len(ds) != 1 || ds[0].ID != did || ds[0].EventType != "webhook.test" || ds[0].State != certorder.DeliveryPending {
		t.Fatalf("MemberDeliveries = %+v", ds)
	}
	if ds, err := s.MemberDeliveries(ctx, alice.ID, theirs.ID, 20); err != nil || len(ds) != 0 {
		t.Fatalf("alice lists bob's deliveries: %+v %v", ds, err)
	}

	// Redelivery: not while pending; once finished, again at once with the
	// same message ID; never another member's, nor through another endpoint.
	wantErr(t, s.RedeliverMemberDelivery(ctx, alice.ID, mine.ID, did), certorder.ErrConflict)
	at := time.Now().UTC().Truncate(time.Microsecond)
	must(t, s.FinishAttempt(ctx, certorder.Attempt{DeliveryID: did, EndpointID: mine.ID, At: at, Status: 500,
		Class: "http_status", Error: "oops", State: certorder.DeliveryFailed}))
	must(t, s.FinishAttempt(ctx, certorder.Attempt{DeliveryID: theirDelivery, EndpointID: theirs.ID, At: at, Status: 500,
		Class: "http_status", State: certorder.DeliveryFailed}))
	for _, c := range []struct{ endpoint, delivery int64 }{
		{theirs.ID, theirDelivery}, {mine.ID, theirDelivery}, {theirs.ID, did}, {mine.ID, missing}, {missing, did},
	} {
		wantErr(t, s.RedeliverMemberDelivery(ctx, alice.ID, c.endpoint, c.delivery), certorder.ErrNotFound)
	}
	if due, err := s.ClaimDeliveries(ctx, certorder.Claim{At: time.Now().Add(time.Second), Lease: time.Minute, Limit: 10}); err != nil || len(due) != 0 {
		t.Fatalf("a refused redelivery queued something: %+v %v", due, err)
	}
	must(t, s.RedeliverMemberDelivery(ctx, alice.ID, mine.ID, did))
	due, err := s.ClaimDeliveries(ctx, certorder.Claim{At: time.Now().Add(time.Second), Lease: time.Minute, Limit: 10})
	must(t, err)
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
	must(t, s.FinishAttempt(ctx, certorder.Attempt{DeliveryID: did, EndpointID: mine.ID, At: at, Status: 503,
		Class: "http_status", State: certorder.DeliveryPending, NextAttempt: at.Add(time.Hour)}))
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
	if ds, err := s.MemberDeliveries(ctx, alice.ID, mine.ID, 20); err != nil || len(ds) != 0 {
		t.Fatalf("deliveries of a deleted endpoint: %+v %v", ds, err)
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
