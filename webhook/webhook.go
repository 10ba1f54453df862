// Package webhook holds the parts of certorder's signed webhooks that do not
// depend on the store: the events' wire form, secrets and signatures
// (Standard Webhooks, github.com/standard-webhooks/standard-webhooks), an
// HTTP client that refuses to reach private addresses, one delivery attempt,
// a delivery as a job of the queue (package queue), and the Worker that
// fans the order events out to the endpoints and delivers them; serve runs
// it. The member's side of the signature is client.VerifyWebhook.
//
// A message is built once and kept as bytes, so every retry sends exactly
// what was signed:
//
//	id := webhook.NewMessageID()
//	body, _ := json.Marshal(webhook.OrderRenewed(time.Now(), 10001, 10002))
//	// ... store id and body; then, for each attempt:
//	res := webhook.Deliver(ctx, hc, endpointURL, keys, id, time.Now(), body)
package webhook

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/certorder/certorder"
)

// Event types. The five order events are the ones members subscribe to;
// TypeTest is what "send a test event" sends, and is delivered whatever
// types an endpoint chose. Names follow the spec's convention: full-stop
// delimited, [a-zA-Z0-9_] in each part.
const (
	TypeOrderRenewed       = certorder.EventOrderRenewed
	TypeOrderStatusChanged = certorder.EventOrderStatusChanged
	TypeOrderReissued      = certorder.EventOrderReissued
	TypeOrderExpiring      = certorder.EventOrderExpiring
	TypeOrderPlanEnding    = certorder.EventOrderPlanEnding
	TypeTest               = "webhook.test"
)

// EventTypes returns the event types an endpoint can subscribe to, in a
// stable order; an endpoint with no explicit choice gets all of them.
func EventTypes() []string {
	return slices.Clone(certorder.OrderEventTypes)
}

// KnownEventType reports whether t is one of EventTypes (for checking an
// endpoint's --events list). TypeTest is not subscribable, so it is not known here.
func KnownEventType(t string) bool {
	for _, k := range EventTypes() {
		if t == k {
			return true
		}
	}
	return false
}

// Event is the payload of one webhook: {"type":...,"timestamp":...,"data":{...}}.
// Timestamp is when the event happened (not when it is delivered); it is
// sent in RFC 3339, UTC.
type Event struct {
	Type      string          `json:"type"`
	Timestamp time.Time       `json:"timestamp"`
	Data      json.RawMessage `json:"data"`
}

var eventTypePattern = regexp.MustCompile(`^[a-zA-Z0-9_]+(\.[a-zA-Z0-9_]+)*$`)

// MarshalJSON writes the payload with the timestamp in UTC and data an object
// ({} when Data is empty); it refuses a malformed type or data that is not
// a JSON object.
func (e Event) MarshalJSON() ([]byte, error) {
	if !eventTypePattern.MatchString(e.Type) {
		return nil, fmt.Errorf("webhook: event type %q is not full-stop delimited [a-zA-Z0-9_] parts", e.Type)
	}
	data := bytes.TrimSpace(e.Data)
	if len(data) == 0 {
		data = []byte("{}")
	}
	if data[0] != '{' || !json.Valid(data) {
		return nil, errors.New("webhook: event data is not a JSON object")
	}
	return json.Marshal(struct {
		Type      string          `json:"type"`
		Timestamp string          `json:"timestamp"`
		Data      json.RawMessage `json:"data"`
	}{e.Type, e.Timestamp.UTC().Format(time.RFC3339Nano), data})
}

// RenewedData is the data of order.renewed: OrderID was renewed by
// RenewedOrderID. It and StatusChangedData are the root package's, which
// makes the events of a change (certorder.OrderChange.Events).
type RenewedData = certorder.RenewedData

// StatusChangedData is the data of order.status_changed.
type StatusChangedData = certorder.StatusChangedData

// ReissuedData is the data of order.reissued.
type ReissuedData = certorder.ReissuedData

// ExpiringData is the data of order.expiring: the certificate's end
// (ValidTill, YYYY-MM-DD) and its days remaining, the plan's end
// (OrderValidTill, "" when not stated) and the order's next step
// (certorder.Windows.Next: reissue, renew, issue_renewal, none).
type ExpiringData struct {
	OrderID        int64          `json:"order_id"`
	ValidTill      string         `json:"valid_till"`
	DaysRemaining  int            `json:"days_remaining"`
	OrderValidTill string         `json:"order_valid_till"`
	NextStep       certorder.Step `json:"next_step"`
}

// PlanEndingData is the data of order.plan_ending: the plan's end
// (OrderValidTill) and its days remaining, the certificate's end and the
// order's next step.
type PlanEndingData struct {
	OrderID        int64          `json:"order_id"`
	OrderValidTill string         `json:"order_valid_till"`
	DaysRemaining  int            `json:"days_remaining"`
	ValidTill      string         `json:"valid_till"`
	NextStep       certorder.Step `json:"next_step"`
}

// TestData is the data of webhook.test.
type TestData struct {
	Message string `json:"message"`
}

// OrderRenewed is the order.renewed event: order renewedOrderID replaced orderID at ts.
func OrderRenewed(ts time.Time, orderID, renewedOrderID int64) Event {
	return newEvent(TypeOrderRenewed, ts, RenewedData{OrderID: orderID, RenewedOrderID: renewedOrderID})
}

// OrderStatusChanged is the order.status_changed event.
func OrderStatusChanged(ts time.Time, orderID int64, status, previousStatus string) Event {
	return newEvent(TypeOrderStatusChanged, ts, StatusChangedData{OrderID: orderID, Status: status, PreviousStatus: previousStatus})
}

// OrderExpiring is the order.expiring event.
func OrderExpiring(ts time.Time, d ExpiringData) Event {
	return newEvent(TypeOrderExpiring, ts, d)
}

// TestMessage is what a test event says; a chat room's test message too.
const TestMessage = "This is a test event from certorder."

// TestEvent is the webhook.test event a member sends from the web page to try an endpoint.
func TestEvent(ts time.Time) Event {
	return newEvent(TypeTest, ts, TestData{TestMessage})
}

func newEvent(typ string, ts time.Time, data any) Event {
	raw, err := json.Marshal(data)
	if err != nil {
		panic(err) // the data types above always marshal
	}
	return Event{Type: typ, Timestamp: ts, Data: raw}
}

// NewMessageID returns a fresh webhook-id: msg_ and 26 base32 characters
// (130 random bits). The caller stores it with the message: it is the same
// on every retry, so receivers can use it to drop duplicates.
func NewMessageID() string {
	return "msg_" + rand.Text()
}

var messageIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// ValidMessageID reports whether id may be sent as a webhook-id. It must
// hold no full stop: the signed content is "id.timestamp.body".
func ValidMessageID(id string) bool {
	return messageIDPattern.MatchString(id)
}
