package notice

import (
	"time"

	"github.com/certorder/certorder"
)

// The kinds of notice message.
const (
	KindEvent   = "event"   // one event
	KindDigest  = "digest"  // the events of a day beyond certorder.NoticeDailyEvents
	KindConfirm = "confirm" // the confirmation link of an address added on the web page
)

// Notice is one message to one address, as the mailer reads it from its
// job of the queue.
type Notice struct {
	ID        int64
	Kind      string // KindEvent, KindDigest or KindConfirm
	Day       string // the UTC day it was queued, YYYY-MM-DD
	CreatedAt time.Time
	Address   certorder.NoticeAddress
	Events    []certorder.Event // its event, or the digest's, oldest first (the first EventCount); none for a confirmation
	// EventCount is how many events it tells: a digest's may be more than
	// it lists.
	EventCount int
}
