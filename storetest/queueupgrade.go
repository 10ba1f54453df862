package storetest

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/certorder/certorder/internal/storekit"
	"github.com/certorder/certorder/queue"
)

// QueuedBefore is what a store held queued before the one queue (sqlite
// 0013, postgres 0016), as the upgrade tests write it with the older
// schema's SQL: member 1 (alice) with endpoint 1 and address 1; delivery 1
// delivered, delivery 2 pending (due 2026-11-02T00:00:00Z, two attempts);
// notice 1 an event notice delivered, notice 2 the day's pending digest
// (due 2026-11-02T00:00:00Z) with two events.
const (
	QueuedBody     = `{"type":"order.renewed","data":{"order_id":1, "renewed_order_id":2}}` // not compacted: kept as signed
	QueuedDigestAt = "2026-11-02T00:00:00Z"
)

// QueueUpgraded checks a store upgraded with QueuedBefore's rows: every
// delivery and notice is a job of its kind, with its state, attempts, due
// time and body byte for byte; the digest is still the day's pending one
// (an event joins it) with its events; new jobs take new IDs.
func QueueUpgraded(t *testing.T, s storekit.Store) {
	t.Helper()
	ctx := context.Background()
	deliveries := memberDeliveries(t, s, 1, 1)
	if len(deliveries) != 2 || deliveries[0].ID != 2 || deliveries[0].State != "pending" || deliveries[0].Attempts != 2 ||
		string(deliveries[0].Body) != QueuedBody || deliveries[0].MsgID != "msg_2" || deliveries[0].LastStatus != 503 ||
		deliveries[0].LastLatency != 1500*time.Microsecond || deliveries[1].State != "delivered" || deliveries[1].EventType != "order.renewed" {
		t.Errorf("deliveries after the upgrade: %+v", deliveries)
	}
	due, err := time.Parse(time.RFC3339, QueuedDigestAt)
	must(t, err)
	if !deliveries[0].NextAttempt.Equal(due) {
		t.Errorf("the pending delivery is due at %v, want %v", deliveries[0].NextAttempt, due)
	}
	notices, err := s.Jobs(ctx, queue.List{Kind: queue.KindNoticeDigest, MemberID: 1, SubjectID: 1, Limit: 10})
	must(t, err)
	if len(notices) != 1 || notices[0].State != queue.Pending || !notices[0].RunAfter.Equal(due) || notices[0].Key != "1/2026-11-01" {
		t.Fatalf("the digest after the upgrade: %+v", notices)
	}
	digest := notices[0]
	evs, n, err := s.NoticeEvents(ctx, digest.ID, 1)
	must(t, err)
	if len(evs) != 1 || n != 2 || evs[0].Type != "order.status_changed" || evs[0].MemberID != 1 {
		t.Errorf("the digest's events: %+v", evs)
	}
	sent, err := s.Jobs(ctx, queue.List{Kind: queue.KindNoticeEvent, MemberID: 1, SubjectID: 1, Limit: 10})
	must(t, err)
	if len(sent) != 1 || sent[0].State != queue.Done || sent[0].ID == digest.ID || slices.Contains([]int64{1, 2}, sent[0].ID) {
		t.Errorf("the event notice after the upgrade: %+v", sent)
	}
	// A job of the same key joins the pending digest; a new job a new ID.
	ids, err := s.Enqueue(ctx, queue.Job{Kind: queue.KindNoticeDigest, MemberID: 1, SubjectID: 1, Key: "1/2026-11-01"},
		queue.Job{Kind: "test", MemberID: 1})
	must(t, err)
	if ids[0] != digest.ID || ids[1] <= max(digest.ID, sent[0].ID) {
		t.Errorf("enqueued after the upgrade: %v (digest %d, notice %d)", ids, digest.ID, sent[0].ID)
	}
	jobs, err := s.ClaimJobs(ctx, queue.Claim{Kinds: []string{queue.KindWebhook, queue.KindNoticeDigest}, Owner: "storetest",
		At: due, Lease: time.Minute, Limit: 10})
	must(t, err)
	var kinds []string
	for _, j := range jobs {
		kinds = append(kinds, j.Kind)
	}
	if strings.Join(kinds, ",") != "webhook,notice.digest" {
		t.Errorf("due after the upgrade: %v", kinds)
	}
}
