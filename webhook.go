package certorder

import (
	"encoding/json"
	"time"
)

// Webhooks: members' endpoints and the order events. The events of a
// change to an order are made here (OrderChange.Events) and written by the
// path that makes the change, in its transaction (storekit.EventWriter): the import
// (ImportInBatches), order renew (OrderStore.RecordRenewal), the CertCentral
// sync (ccsync.ApplyUpstream). A restore inserts and never emits. Package
// webhook fans them out to the endpoints as jobs of the queue (package
// queue) and delivers them; package mailer mails them.

// Endpoint is a member's webhook endpoint.
type Endpoint struct {
	ID              int64
	MemberID        int64
	Member          string
	URL             string
	Format          string    // FormatStandard or FormatSlack; "" reads as FormatStandard
	EventTypes      []string  // the order events it wants; empty: all of them
	Secret          string    // whsec_...: shown once at creation, kept to sign
	PreviousSecret  string    // during a rotation, also signed with until PreviousExpires
	PreviousExpires time.Time //
	Enabled         bool
	DisabledReason  string // why it was disabled: by the member, 410 Gone, failing for days
	CreatedAt       time.Time
	LastSuccess     time.Time // the last delivery it accepted
	FailingSince    time.Time // the first failure since its last success; zero when not failing
}

// The formats of an endpoint's messages.
const (
	// FormatStandard is the signed Standard Webhooks payload.
	FormatStandard = "standard"
	// FormatSlack is Slack's incoming-webhook JSON, {"text": ...}, one
	// readable line (package notice), which Mattermost and Rocket.Chat
	// take too.
	FormatSlack = "slack"
)

// EndpointFormat is the format f names, FormatStandard for "" (an endpoint
// stored before formats, or made without one).
func EndpointFormat(f string) string {
	if f == "" {
		return FormatStandard
	}
	return f
}

// Event is a change to an order of a member, as a store keeps it.
type Event struct {
	ID       int64
	MemberID int64
	Type     string // one of the Event* types
	Data     []byte // the event's data object, JSON
	At       time.Time
}

// The order events. The first three are what a change to an order causes
// (OrderChange.Events); the last two the webhook worker makes as an end
// comes near.
const (
	EventOrderRenewed       = "order.renewed"
	EventOrderStatusChanged = "order.status_changed"
	EventOrderReissued      = "order.reissued"
	EventOrderExpiring      = "order.expiring"    // the certificate's end
	EventOrderPlanEnding    = "order.plan_ending" // the plan's end
)

// RenewedData is the data of order.renewed: OrderID was renewed by RenewedOrderID.
type RenewedData struct {
	OrderID        int64 `json:"order_id"`
	RenewedOrderID int64 `json:"renewed_order_id"`
}

// StatusChangedData is the data of order.status_changed.
type StatusChangedData struct {
	OrderID        int64  `json:"order_id"`
	Status         string `json:"status"`
	PreviousStatus string `json:"previous_status"`
}

// Events are the events of the change, at: order.renewed when it recorded
// a renewal, order.status_changed when it changed the status,
// order.reissued when it gave the order a new certificate. An order the
// member did not have before is no event.
func (c OrderChange) Events(at time.Time) []Event {
	var evs []Event
	add := func(typ string, data any) {
		raw, _ := json.Marshal(data) // the data types always marshal
		evs = append(evs, Event{MemberID: c.MemberID, Type: typ, Data: raw, At: at})
	}
	if c.RenewalLinked() && !c.Added {
		add(EventOrderRenewed, RenewedData{c.OrderID, c.RenewedBy})
	}
	if c.StatusChanged() {
		add(EventOrderStatusChanged, StatusChangedData{c.OrderID, c.Status, c.PreviousStatus})
	}
	if c.Reissue != nil && !c.Added {
		add(EventOrderReissued, c.Reissue)
	}
	return evs
}
