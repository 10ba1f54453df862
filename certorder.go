// Package certorder holds the domain of the certificate-order lookup service:
// members, API keys, orders and their renewals, the Store interface every
// backend implements, and the error numbers of the wire protocol.
//
// It imports only the standard library; storage lives in sqlite/ and
// postgres/, HTTP in server/, the member-side Go client in client/.
package certorder

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"time"
)

// Member is a reseller's customer. Its Name is the AccessName of the API.
type Member struct {
	ID        int64
	Name      string
	Disabled  bool
	CreatedAt time.Time
}

// Key is an API key as stored: never the key itself, only its hash.
type Key struct {
	ID        string // public identifier, also embedded in the key text
	Member    string // member name
	Label     string
	Hash      []byte // SHA-256 of the whole key text
	CreatedAt time.Time
	RevokedAt time.Time // zero while the key is active
}

// Revoked reports whether the key has been revoked.
func (k Key) Revoked() bool { return !k.RevokedAt.IsZero() }

// Credential is what authentication needs about one key: the key's hash and
// state, and the state of the member that owns it.
type Credential struct {
	KeyID          string
	KeyHash        []byte
	KeyRevoked     bool
	MemberID       int64
	Member         string
	MemberDisabled bool
}

// Renewal says that order New renewed order Old.
type Renewal struct {
	Old, New int64
}

// Store is the persistence the service needs. Implementations return the
// errors below (wrapped with detail), never driver errors.
type Store interface {
	// AddMember creates a member; ErrConflict if the name is taken.
	AddMember(ctx context.Context, name string) (Member, error)
	// Members lists every member by name.
	Members(ctx context.Context) ([]Member, error)
	// SetMemberDisabled disables or re-enables a member.
	SetMemberDisabled(ctx context.Context, name string, disabled bool) error

	// AddKey stores a new key for the named member (k.Member is ignored).
	AddKey(ctx context.Context, member string, k Key) error
	// Keys lists the keys of a member, oldest first.
	Keys(ctx context.Context, member string) ([]Key, error)
	// RevokeKey revokes a key by its ID; revoking twice is not an error.
	RevokeKey(ctx context.Context, id string) error
	// FindCredential returns the key with the given ID and its member and,
	// when orderID is not 0, the order with that number of any member (nil
	// if there is none), in one read: it is the hot path of every request.
	FindCredential(ctx context.Context, keyID string, orderID int64) (Credential, *Order, error)

	// ImportOrders stores every order for the member in one transaction:
	// all of them, or, on the first error, none. An order that exists
	// already is replaced. It returns how many orders were stored.
	ImportOrders(ctx context.Context, member string, orders iter.Seq2[*Order, error]) (int, error)
	// FindOrder returns one order of any member.
	FindOrder(ctx context.Context, id int64) (*Order, error)
	// Orders lists the orders of a member by order number.
	Orders(ctx context.Context, member string) ([]*Order, error)
	// RecordRenewal records that order newID renewed order oldID (see CheckRenewal).
	RecordRenewal(ctx context.Context, oldID, newID int64) error

	// Restore loads an export (see Export and ReadExport) into an empty
	// store, in one transaction; ErrConflict if the store holds anything.
	Restore(ctx context.Context, records iter.Seq2[Record, error]) error

	// AppendAudit adds entries to the audit trail.
	AppendAudit(ctx context.Context, entries []AuditEntry) error
	// Audit lists audit entries, newest first.
	Audit(ctx context.Context, q AuditQuery) ([]AuditEntry, error)
	// PruneAudit deletes the entries older than before, and returns how many.
	PruneAudit(ctx context.Context, before time.Time) (int64, error)

	// AddSession stores a web session.
	AddSession(ctx context.Context, s Session) error
	// FindSession returns the session with the token hash, with its key's
	// and member's state; ErrNotFound if there is none.
	FindSession(ctx context.Context, tokenHash []byte) (Session, error)
	// DeleteSession ends a session; ending one that is gone is not an error.
	DeleteSession(ctx context.Context, tokenHash []byte) error
	// PruneSessions deletes the sessions expired before now.
	PruneSessions(ctx context.Context, now time.Time) error

	// Ping reports whether the store can be reached.
	Ping(ctx context.Context) error
	Close() error
}

// Errors a Store returns, wrapped with detail; test them with errors.Is.
var (
	ErrNotFound    = errors.New("not found")
	ErrConflict    = errors.New("conflict")
	ErrInvalid     = errors.New("invalid")
	ErrUnavailable = errors.New("store unavailable")
)

// ValidMemberName checks a member name (the AccessName): 1 to 64 characters
// out of letters, digits and . _ @ -.
func ValidMemberName(name string) error {
	if len(name) == 0 || len(name) > 64 {
		return fmt.Errorf("%w: member name must be 1 to 64 characters", ErrInvalid)
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("._@-", c)) {
			return fmt.Errorf("%w: member name %q may hold only letters, digits and . _ @ -", ErrInvalid, name)
		}
	}
	return nil
}
