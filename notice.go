package certorder

import (
	"context"
	"slices"
	"time"
)

// E-mail notices: a member's addresses, and the outbox of the messages sent
// to them. The order events of the webhook outbox (Event) are fanned out to
// the addresses that want them (NoticeOutbox.QueueNotices), each a message
// of its own up to NoticeDailyEvents a day, the rest of the day in one
// digest; package notice says them in words, package mailer sends them.

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

// The kinds of notice message.
const (
	NoticeEvent   = "event"   // one event
	NoticeDigest  = "digest"  // the events of a day beyond NoticeDailyEvents
	NoticeConfirm = "confirm" // the confirmation link of an address added on the web page
)

// Notice is one message of the outbox to one address. Its state is one of
// the Delivery states.
type Notice struct {
	ID          int64
	Kind        string
	Day         string // the UTC day it was queued, YYYY-MM-DD
	State       string
	Attempts    int
	NextAttempt time.Time
	CreatedAt   time.Time
	LastError   string

	Address NoticeAddress // filled in by ClaimNotices
	Events  []Event       // filled in by ClaimNotices: its event, or the digest's, oldest first; none for a confirmation
}

// NoticeAttempt is the outcome of one attempt to send a notice.
type NoticeAttempt struct {
	NoticeID    int64
	AddressID   int64
	At          time.Time
	State       string    // the notice's new state
	NextAttempt time.Time // when State is pending
	Error       string
	// FailureKind is what a member is told of a failure (mailer's Kind...):
	// the recipient's server refused the address, or the message, or the
	// service could not use its relay.
	FailureKind string
	// Permanent: the mail server refused the address or the message (5xx),
	// or the last attempt failed: recorded on the address, for the member
	// to see. A pending attempt's failure is recorded on the address as its
	// retry (RetryFailure, RetryAt), for the operator. A success clears both.
	Permanent bool
}

// NoticeStore is every notice role.
type NoticeStore interface {
	MemberNoticeStore
	NoticeOutbox
}

// MemberNoticeStore is what the web page and the operator do with notice
// addresses. The Member... calls are scoped to memberID in the store's
// query, as MemberWebhookStore's.
type MemberNoticeStore interface {
	// NoticeAddresses lists the member's addresses, oldest first.
	NoticeAddresses(ctx context.Context, memberID int64) ([]NoticeAddress, error)
	// AddNoticeAddress stores a new address of the member unless it holds
	// max already (ErrLimit) or has this address (ErrConflict), atomically
	// as AddMemberKey. One not confirmed (a.ConfirmedAt zero) gets its
	// confirmation message queued in the same transaction.
	AddNoticeAddress(ctx context.Context, memberID int64, a NoticeAddress, max int) (NoticeAddress, error)
	// MemberNoticeAddress returns the member's address id.
	MemberNoticeAddress(ctx context.Context, memberID, id int64) (NoticeAddress, error)
	// SetMemberNoticeAddress changes the language and events of the member's address id.
	SetMemberNoticeAddress(ctx context.Context, memberID, id int64, lang string, events []string) error
	// DeleteMemberNoticeAddress deletes the member's address id and its messages.
	DeleteMemberNoticeAddress(ctx context.Context, memberID, id int64) error
	// FindNoticeAddress returns an address by its ID alone, for the links
	// in a message (whose signature package notice checks) and the operator.
	FindNoticeAddress(ctx context.Context, id int64) (NoticeAddress, error)
	// ConfirmNoticeAddress confirms address id at at; ErrConflict if it
	// is confirmed already (a confirmation link works once).
	ConfirmNoticeAddress(ctx context.Context, id int64, at time.Time) error
	// UnsubscribeNoticeAddress stops the messages to address id (its
	// pending ones too); unsubscribing twice is not an error.
	UnsubscribeNoticeAddress(ctx context.Context, id int64, at time.Time) error
}

// NoticeOutbox is the outbox of notice messages, what mailer.Worker uses
// besides reading orders.
type NoticeOutbox interface {
	// QueueNotices takes up to limit order events not yet queued for
	// notices and, in one transaction, queues them for every active
	// address of the event's member that wants their type: a message each,
	// up to NoticeDailyEvents of an address on at's day (UTC), later ones
	// into the day's digest, due as the day ends. Events older than
	// maxAge are taken and queued for no one. Instances sharing the store
	// never take the same event. It returns how many events it took and
	// how many it queued for an address.
	QueueNotices(ctx context.Context, limit int, at time.Time, maxAge time.Duration) (taken, queued int, err error)
	// ClaimNotices takes up to limit pending notices due at at, with their
	// address and events, and holds them for lease (as ClaimDeliveries).
	ClaimNotices(ctx context.Context, at time.Time, lease time.Duration, limit int) ([]Notice, error)
	// FinishNotice records an attempt's outcome, and its address's.
	FinishNotice(ctx context.Context, a NoticeAttempt) error
	// PruneNotices deletes the notices finished before before.
	PruneNotices(ctx context.Context, before time.Time) error
}
