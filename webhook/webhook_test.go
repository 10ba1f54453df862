package webhook_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/certorder/certorder/webhook"
)

func TestEventPayloads(t *testing.T) {
	t.Parallel()
	// A zone other than UTC: the payload is in UTC all the same.
	ts := time.Date(2026, 11, 21, 11, 0, 0, 500_000_000, time.FixedZone("CET", 3600))
	for _, tc := range []struct {
		ev   webhook.Event
		want string
	}{
		{webhook.OrderRenewed(ts, 10001, 10002),
			`{"type":"order.renewed","timestamp":"2026-11-21T10:00:00.5Z","data":{"order_id":10001,"renewed_order_id":10002}}`},
		{webhook.OrderStatusChanged(ts, 10003, "issued", "pending"),
			`{"type":"order.status_changed","timestamp":"2026-11-21T10:00:00.5Z","data":{"order_id":10003,"status":"issued","previous_status":"pending"}}`},
		{webhook.OrderExpiring(ts, webhook.ExpiringData{OrderID: 10004, ValidTill: "2026-12-22", DaysRemaining: 30,
			OrderValidTill: "2028-03-01", NextStep: "reissue"}),
			`{"type":"order.expiring","timestamp":"2026-11-21T10:00:00.5Z","data":{"order_id":10004,"valid_till":"2026-12-22","days_remaining":30,"order_valid_till":"2028-03-01","next_step":"reissue"}}`},
		{webhook.TestEvent(ts.Truncate(time.Second)),
			`{"type":"webhook.test","timestamp":"2026-11-21T10:00:00Z","data":{"message":"This is a test event from certorder."}}`},
		{webhook.Event{Type: "order.renewed", Timestamp: ts},
			`{"type":"order.renewed","timestamp":"2026-11-21T10:00:00.5Z","data":{}}`},
	} {
		got, err := json.Marshal(tc.ev)
		if err != nil {
			t.Fatalf("%s: %v", tc.ev.Type, err)
		}
		if string(got) != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.ev.Type, got, tc.want)
		}
		var back webhook.Event
		if err := json.Unmarshal(got, &back); err != nil || back.Type != tc.ev.Type || !back.Timestamp.Equal(tc.ev.Timestamp) {
			t.Errorf("%s: read back as %+v, %v", tc.ev.Type, back, err)
		}
	}
}

func TestEventRefusesBadPayload(t *testing.T) {
	t.Parallel()
	for name, ev := range map[string]webhook.Event{
		"empty type":      {Data: json.RawMessage(`{}`)},
		"space in type":   {Type: "order renewed"},
		"empty part":      {Type: "order..renewed"},
		"data not object": {Type: "order.renewed", Data: json.RawMessage(`[1,2]`)},
		"data not JSON":   {Type: "order.renewed", Data: json.RawMessage(`{"a":`)},
	} {
		if b, err := json.Marshal(ev); err == nil {
			t.Errorf("%s: marshalled to %s", name, b)
		}
	}
}

func TestEventTypes(t *testing.T) {
	t.Parallel()
	want := []string{"order.renewed", "order.status_changed", "order.reissued", "order.expiring", "order.plan_ending"}
	if got := webhook.EventTypes(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("EventTypes = %v, want %v", got, want)
	}
	for _, typ := range want {
		if !webhook.KnownEventType(typ) {
			t.Errorf("%s not known", typ)
		}
	}
	for _, typ := range []string{"", "order", "order.renewed ", webhook.TypeTest} {
		if webhook.KnownEventType(typ) {
			t.Errorf("%q known", typ)
		}
	}
}

func TestMessageID(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 100 {
		id := webhook.NewMessageID()
		if !strings.HasPrefix(id, "msg_") || len(id) != 30 || !webhook.ValidMessageID(id) {
			t.Fatalf("message ID %q", id)
		}
		if seen[id] {
			t.Fatalf("message ID %q twice", id)
		}
		seen[id] = true
	}
	for _, id := range []string{"", "msg_a.b", "msg a", "msg_\n", strings.Repeat("a", 129)} {
		if webhook.ValidMessageID(id) {
			t.Errorf("%q valid", id)
		}
	}
}
