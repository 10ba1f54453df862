package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/storekit"
	"github.com/certorder/certorder/queue"
)

// A disabled member's events are posted to none of its endpoints, and its
// addresses say it is disabled (the mailer sends them nothing, the page
// confirms none); enabled again, its next events are posted.
func testDisabledMember(t *testing.T, open func(t *testing.T) storekit.Store) {
	ctx := context.Background()
	s := open(t)
	defer s.Close()
	m, err := s.AddMember(ctx, "acme")
	must(t, err)
	_, err = s.AddEndpoint(ctx, "acme", certorder.Endpoint{URL: "https://acme.example/hook", Secret: "whsec_x"})
	must(t, err)
	a, err := s.AddNoticeAddress(ctx, m.ID, certorder.NoticeAddress{Address: "ops@acme.example", Lang: "en",
		Secret: "c2VjcmV0LXNlY3JldC1zZWNyZXQ=", CreatedAt: time.Now()}, certorder.MaxNoticeAddresses)
	must(t, err)
	posted := func() int {
		t.Helper()
		n := 0
		_, err := s.FanOut(ctx, 100, func(ev certorder.Event, ep certorder.Endpoint) (queue.Job, error) {
			n++
			return queue.Job{Kind: queue.KindWebhook, MemberID: ep.MemberID, SubjectID: ep.ID, Payload: []byte("{}")}, nil
		})
		must(t, err)
		return n
	}
	statusChange := func(id int64) {
		t.Helper()
		_, err := s.ImportOrders(ctx, "acme", Orders(t, OrderJSON(id, 0, "2030-01-01")))
		must(t, err)
		_, err = s.ImportOrders(ctx, "acme", Orders(t, withStatus(OrderJSON(id, 0, "2030-01-01"), "revoked")))
		must(t, err)
	}
	must(t, s.SetMemberDisabled(ctx, "acme", true))
	statusChange(1)
	if n := posted(); n != 0 {
		t.Fatalf("a disabled member's event was posted to %d endpoints", n)
	}
	got, err := s.FindNoticeAddress(ctx, a.ID)
	must(t, err)
	if !got.MemberDisabled {
		t.Fatalf("the address of a disabled member: %+v", got)
	}
	must(t, s.SetMemberDisabled(ctx, "acme", false))
	statusChange(2)
	if n := posted(); n != 1 {
		t.Fatalf("enabled again, an event posted to %d endpoints", n)
	}
	if got, _ := s.FindNoticeAddress(ctx, a.ID); got.MemberDisabled {
		t.Fatalf("enabled again, the address says disabled: %+v", got)
	}
}
