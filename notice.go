package certorder

import (
	"slices"
	"time"
)

// E-mail notices: a member's addresses, and the messages sent to them. The
// order events (Event) are queued for the addresses that want them (package
// mailer, as jobs of the queue), each a message of its own up to
// NoticeDailyEvents a day, the rest of the day in one digest; package
// notice says them in words, package mailer sends them.

// OrderEventTypes are the order events a member subscribes to, with a
// webhook endpoint or a notice address, in a stable order.
var OrderEventTypes = []string{EventOrderRenewed, EventOrderStatusChanged, EventOrderReissued,
	EventOrderExpiring, EventOrderPlanEnding}

// NoticeAddress is an e-mail address a member gets notices at.
type NoticeAddress struct {
	ID         int64
	MemberID   int64
	Member     string
	Address    string
	Lang       string   // the messages' language: en or ja
	EventTypes []string // the order events it wants; empty: all of them
	// Secret keys the HMAC of its confirmation and unsubscribe links
	// (package notice); never shown, never logged.
	Secret         string
	CreatedAt      time.Time
	ConfirmedAt    time.Time // zero: awaiting confirmation (added on the web page)
	UnsubscribedAt time.Time // not zero: unsubscribed with a message's link
	LastSent       time.Time // the last message the mail server accepted
	FailedAt       time.Time // the last permanent failure, zero when none since LastSent
	Failure        string    // what happened then, for the operator (mailer.Failure: the step and the relay's words)
	FailureKind    string    // what the member is told of it (mailer's Kind...)
	// The last temporary failure, and when that message is tried again;
	// zero when none since the last success or permanent failure.
	RetryFailedAt time.Time
	RetryFailure  string
	RetryAt       time.Time
	// MemberDisabled: the member is disabled; nothing is sent to it, and
	// its addresses cannot be confirmed, until it is enabled again.
	MemberDisabled bool
}

// Active reports whether messages are sent to the address: confirmed and
// not unsubscribed.
func (a NoticeAddress) Active() bool { return !a.ConfirmedAt.IsZero() && a.UnsubscribedAt.IsZero() }

// Wants reports whether the address takes events of type typ.
func (a NoticeAddress) Wants(typ string) bool {
	return len(a.EventTypes) == 0 || slices.Contains(a.EventTypes, typ)
}

// MaxNoticeAddresses bounds a member's addresses, the operator's and the
// member's own together.
const MaxNoticeAddresses = 5

// NoticeDailyEvents is how many events an address is sent one by one in a
// day (UTC); the day's later events wait for one digest, sent as the day
// ends, so that a busy day is 11 messages at most, not a flood.
const NoticeDailyEvents = 10
