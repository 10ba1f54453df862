package storekit

import (
	"context"
	"time"

	"github.com/certorder/certorder"
)

// NoticeRecipientStore keeps the record of the confirmations sent and the
// recipients' blocks (certorder.NoticeRecipient, the budgets). The store's
// AddNoticeAddress applies both: it refuses a blocked recipient
// (*certorder.BlockedError), and a confirmation beyond a budget
// (*certorder.BudgetError).
type NoticeRecipientStore interface {
	// NoticeConfirmations are the recorded confirmations that went to
	// address id, newest first: usually one, more if the ID was used
	// again after a removal.
	NoticeConfirmations(ctx context.Context, addressID int64) ([]certorder.NoticeConfirmation, error)
	// BlockNoticeRecipient refuses every later address of the recipient
	// (a NoticeRecipient); blocking twice keeps the first time.
	BlockNoticeRecipient(ctx context.Context, recipient string, at time.Time) error
	// UnblockNoticeRecipient lifts the block (the operator's);
	// ErrNotFound if there is none.
	UnblockNoticeRecipient(ctx context.Context, recipient string) error
}
