package certorder

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// The confirmation budget: what the service sends to addresses nobody has
// confirmed. A member who adds an address on the web page makes the
// service mail a stranger; without a bound, adding, removing and adding
// again floods that stranger's mailbox. So each confirmation is recorded
// apart from the address (removing the address does not forget it), and
// counted by the mailbox it reaches (NoticeRecipient) and by the member who
// asked, over ConfirmationWindow. The recipient can refuse them for good
// with the link every confirmation carries (a block).
const (
	// ConfirmationsPerRecipient: confirmations to one mailbox, whichever
	// members ask, in ConfirmationWindow.
	ConfirmationsPerRecipient = 3
	// ConfirmationsPerMember: confirmations one member asks for, to any
	// addresses, in ConfirmationWindow.
	ConfirmationsPerMember = 10
	// ConfirmationWindow is the span the budgets count over.
	ConfirmationWindow = 24 * time.Hour
	// ConfirmationsKept is how long a confirmation is recorded: its block
	// link works that long, at least.
	ConfirmationsKept = 90 * 24 * time.Hour
)

// The budgets a BudgetError names.
const (
	BudgetRecipient = "recipient"
	BudgetMember    = "member"
)

// BudgetError is AddNoticeAddress's refusal of a confirmation beyond a
// budget: which one, its size, and when the oldest confirmation it counts
// leaves the window (when one more may be sent). It wraps ErrLimit.
type BudgetError struct {
	Budget string // BudgetRecipient or BudgetMember
	Limit  int
	Until  time.Time
}

func (e *BudgetError) Error() string {
	return fmt.Sprintf("%s: %d confirmations to this %s in %v already, until %s", ErrLimit, e.Limit, e.Budget,
		ConfirmationWindow, e.Until.UTC().Format(time.RFC3339))
}

func (e *BudgetError) Unwrap() error { return ErrLimit }

// ErrBlocked: the address's owner refused the service's confirmations (the
// link in one); the address cannot be added until the operator lifts it.
var ErrBlocked = errors.New("the recipient refused certorder's messages")

// BlockedError is AddNoticeAddress's refusal of a blocked recipient: which
// one, since when. It is ErrBlocked.
type BlockedError struct {
	Recipient string // NoticeRecipient of the address
	Since     time.Time
}

func (e *BlockedError) Error() string {
	return fmt.Sprintf("%s: %s, on %s", ErrBlocked, e.Recipient, e.Since.UTC().Format(DateLayout))
}

func (e *BlockedError) Unwrap() error { return ErrBlocked }

// NoticeRecipient is the mailbox an address reaches, as the budgets and
// the blocks know it: in lower case, without a subaddress ("+tag" of the
// local part, RFC 5233), so that ops+1@ and ops+2@ are one mailbox.
func NoticeRecipient(address string) string {
	address = strings.ToLower(address)
	at := strings.LastIndexByte(address, '@')
	if at < 0 {
		return address
	}
	local, domain := address[:at], address[at:]
	if plus := strings.IndexByte(local, '+'); plus > 0 {
		local = local[:plus]
	}
	return local + domain
}

// NoticeConfirmation is a confirmation message as recorded for the
// budgets: the address it went to (which may have been removed since) and
// the address's secret then, which signs its block link.
type NoticeConfirmation struct {
	AddressID int64
	MemberID  int64
	Member    string
	Address   string
	Secret    string
	SentAt    time.Time
}
