package certorder

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// Webhooks: members' endpoints, the outbox of order events, and the
// deliveries of those events to endpoints. The events of a change to an
// order are made here (OrderChange.Events) and written by the path that
// makes the change, in its transaction (EventWriter): the import
// (ImportInBatches), order renew (OrderStore.RecordRenewal), the CertCentral
// sync (ccsync.ApplyUpstream). A restore inserts and never emits.
// The payload, signatures and HTTP are package webhook's; the worker that
// fans events out and delivers them runs in serve.

// Endpoint is a member's webhook endpoint.
type Endpoint struct {
	ID              int64
	MemberID        int64
	Member          string
	URL             string
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

// Event is one entry of the outbox: a change to an order of a member.
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

// EventWriter writes events to the outbox in the transaction of the change
// that causes them, so that they commit, and roll back, with it.
type EventWriter interface {
	AddEvents(ctx context.Context, events []Event) error
}

// Delivery states.
const (
	DeliveryPending   = "pending"
	DeliveryDelivered = "delivered"
	DeliveryFailed    = "failed"
)

// Delivery is one message to one endpoint: its ID and body are made once,
// so every retry sends exactly what was signed.
type Delivery struct {
	ID          int64
	EndpointID  int64
	EventType   string
	MsgID       string
	Body        []byte
	State       string
	Attempts    int
	NextAttempt time.Time
	CreatedAt   time.Time

	LastAttempt time.Time
	LastStatus  int    // HTTP status of the last attempt, 0 if none came
	LastClass   string // webhook.Class of the last attempt
	LastLatency time.Duration
	LastError   string

	Endpoint *Endpoint // filled in by ClaimDeliveries
}

// Attempt is the outcome of one delivery attempt, as the worker decided it.
type Attempt struct {
	DeliveryID  int64
	At          time.Time
	Status      int
	Class       string
	Latency     time.Duration
	Error       string
	State       string    // the delivery's new state
	NextAttempt time.Time // when State is pending

	EndpointID int64
	Success    bool   // the endpoint accepted it: failing no more
	Disable    string // not empty: disable the endpoint, for this reason
}

// Claim is what ClaimDeliveries takes.
type Claim struct {
	At    time.Time     // deliveries due at this time
	Lease time.Duration // held this long from At
	Limit int           // at most this many
	// RoundRobin takes at most one delivery per member, members in the
	// order of their oldest due delivery, so that no member's backlog
	// stands before another's.
	RoundRobin bool
	// Served puts these members after every other, in this order (the
	// worker lists the members it has served lately, the busiest and the
	// most recently served last), so that a member waiting its turn is
	// taken before members whose deliveries are going out already,
	// however old their backlog.
	Served []int64
	// SkipEndpoints and SkipMembers take nothing of these (they have
	// enough in flight already).
	SkipEndpoints, SkipMembers []int64
}

// EndingOrder is an order whose certificate or plan ends within a window,
// of a member with an endpoint for the event that end makes
// (EventOrderExpiring, EventOrderPlanEnding), with the thresholds (days)
// told already for that end. Its Order has no Doc.
type EndingOrder struct {
	Order
	Notified []int
}

// End is the date the event of type typ counts to: the certificate's end
// for order.expiring, the plan's for order.plan_ending.
func (o *EndingOrder) End(typ string) string {
	if typ == EventOrderPlanEnding {
		return o.PlanTill
	}
	return o.Certificate.ValidTill
}

// WebhookStore is every webhook role: endpoints as a member and as the
// operator manage them, and the outbox.
type WebhookStore interface {
	MemberWebhookStore
	EndpointAdmin
	WebhookOutbox
}

// MemberWebhookStore is what the member web page does with endpoints:
// list them, and the member's own calls. Each of those is scoped to
// memberID in the store's query, so that another member's endpoint or
// delivery is ErrNotFound, exactly like a missing one, and no request of
// one member can read or change another's. (An ID checked first and used
// after would not do: SQLite may give a deleted endpoint's ID to the next
// one.)
type MemberWebhookStore interface {
	// Endpoints lists a member's endpoints, oldest first.
	Endpoints(ctx context.Context, member string) ([]Endpoint, error)
	// AddMemberEndpoint is AddEndpoint for the member, unless it holds max
	// endpoints already (ErrLimit), atomically as AddMemberKey.
	AddMemberEndpoint(ctx context.Context, memberID int64, e Endpoint, max int) (Endpoint, error)
	// MemberEndpoint returns the member's endpoint id.
	MemberEndpoint(ctx context.Context, memberID, id int64) (Endpoint, error)
	// SetMemberEndpointEnabled enables the member's endpoint id (clearing
	// its failure) or disables it, saying why.
	SetMemberEndpointEnabled(ctx context.Context, memberID, id int64, enabled bool, reason string) error
	// DeleteMemberEndpoint deletes the member's endpoint id and its deliveries.
	DeleteMemberEndpoint(ctx context.Context, memberID, id int64) error
	// MemberDeliveries lists the latest deliveries of the member's endpoint,
	// newest first; none if the endpoint is not the member's.
	MemberDeliveries(ctx context.Context, memberID, endpointID int64, limit int) ([]Delivery, error)
	// QueueMemberDelivery queues a message to the member's endpoint (a test event).
	QueueMemberDelivery(ctx context.Context, memberID, endpointID int64, eventType, msgID string, body []byte) (int64, error)
	// RedeliverMemberDelivery queues a finished delivery of the member's
	// endpoint again, at once, with the same message ID; ErrConflict if it
	// is still pending (it may be in flight: sending it again now could
	// deliver it twice at once).
	RedeliverMemberDelivery(ctx context.Context, memberID, endpointID, deliveryID int64) error
}

// EndpointAdmin is what the operator does with endpoints beyond a
// member's calls: reach any endpoint by its ID (admin webhook ...).
type EndpointAdmin interface {
	// AddEndpoint stores a new endpoint of the named member; e.ID, MemberID,
	// CreatedAt are filled in.
	AddEndpoint(ctx context.Context, member string, e Endpoint) (Endpoint, error)
	// FindEndpoint returns one endpoint; ErrNotFound if none.
	FindEndpoint(ctx context.Context, id int64) (Endpoint, error)
	// RotateSecret makes secret the endpoint's, the current one staying
	// valid (and signed with) until previousUntil.
	RotateSecret(ctx context.Context, id int64, secret string, previousUntil time.Time) error
	// DeleteEndpoint deletes an endpoint and its deliveries.
	DeleteEndpoint(ctx context.Context, id int64) error
}

// WebhookOutbox is the delivery outbox, all that webhook.Worker uses.
type WebhookOutbox interface {
	// FanOut takes up to limit events not yet fanned out and, in one
	// transaction, queues a delivery to every enabled endpoint of the
	// event's member that wants its type, with the message build makes.
	// Instances sharing the store never take the same event.
	FanOut(ctx context.Context, limit int, build func(Event) (msgID string, body []byte, err error)) (int, error)
	// ClaimDeliveries takes up to c.Limit pending deliveries due at c.At,
	// with their endpoints, and holds them for c.Lease: another instance
	// takes them only once the lease is over (a crashed worker's are
	// retried). See Claim for the fair, round-robin form.
	ClaimDeliveries(ctx context.Context, c Claim) ([]Delivery, error)
	// FinishAttempt records an attempt's outcome, and its endpoint's.
	FinishAttempt(ctx context.Context, a Attempt) error
	// EndingOrders lists the orders whose certificate's end (typ
	// order.expiring) or plan's end (order.plan_ending) is between from
	// and to (YYYY-MM-DD, inclusive), of members with an enabled endpoint
	// wanting typ, renewed or not (the worker decides by Windows.Next).
	EndingOrders(ctx context.Context, typ, from, to string) ([]EndingOrder, error)
	// RecordEnding records an event of type typ for the order and marks
	// the thresholds as told for the order's current end (End), in one
	// transaction; a threshold told already makes it a no-op (false). A
	// new end (a reissued certificate) is told afresh.
	RecordEnding(ctx context.Context, typ string, o EndingOrder, thresholds []int, data []byte, at time.Time) (bool, error)
	// PruneWebhooks deletes the events fanned out and the deliveries
	// finished before before.
	PruneWebhooks(ctx context.Context, before time.Time) error
}

// ParseThresholds reads a comma-separated list of days ("30,7,1"), as the
// stores keep the thresholds told and serve takes them; what does not
// parse as a positive number is left out.
func ParseThresholds(s string) []int {
	var ts []int
	for _, f := range strings.Split(s, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n > 0 {
			ts = append(ts, n)
		}
	}
	return ts
}
