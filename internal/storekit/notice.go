package storekit

import (
	"time"
)

// NoticeAttempt is how a message to an address went, as the address keeps
// it: sent; refused for good (Failure, RetryAt zero: the member sees its
// kind); or failed for now (Failure, and when it is tried again: the
// operator's to see).
type NoticeAttempt struct {
	At          time.Time
	Sent        bool
	Failure     string // what happened, for the operator (mailer.Failure: the step and the relay's words)
	FailureKind string // what the member is told (mailer's Kind...)
	RetryAt     time.Time
}
