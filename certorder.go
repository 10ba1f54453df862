// Package certorder is the ground floor of the certificate-order lookup
// service: its domain types (members, API keys, web sessions, orders as
// stored with their statuses and renewals, audit entries, division links,
// webhook endpoints, events and deliveries), the rules that hold above
// every store (the import's, CheckImport; the renewals', CheckRenewal;
// the webhook events an order change makes, OrderChange.Events), the
// store's roles as
// small interfaces that every backend implements, and the errors a store
// returns.
//
// It imports the standard library only; every other package of the module
// may import it. Reading an order document is internal/orderdoc's, the
// OrderInfo answer's typed view client's, the wire protocol wire/'s,
// storage sqlite/'s and postgres/'s, HTTP server/'s, the sync's ownership
// rules ccsync's; the formats around
// the domain live in internal/ (auditseg, importfile, export).
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
	// SelfServiceKeysOff: the member may not create or revoke its own API
	// keys on the web page (the operator turned self-service off for it).
	SelfServiceKeysOff bool
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

// OrderQuery selects a page of one member's orders, in SQL.
type OrderQuery struct {
	MemberID int64
	// Search: only orders whose common name or a DNS name contains it (any
	// case), or that it names (SearchKeys): by order number, or by the
	// serial number or thumbprint of any certificate the order has had.
	Search string
	// HideRenewed leaves out orders whose renewal is issued (RenewalIssued):
	// the member follows that one. An order a search names is never left out.
	HideRenewed bool
	Sort        OrderSort // the order of the list
	AfterID     int64     // with SortByID: only orders numbered above it (keyset paging)
	Offset      int       // skip this many
	Limit       int       // at most this many; 0: no limit
}

// OrderSort is the order of a list of orders.
type OrderSort int

// The sort orders of OrderQuery; ties are broken by order number.
const (
	SortByID         OrderSort = iota // order number, ascending
	SortByExpiry                      // valid_till, soonest first
	SortByExpiryDesc                  // valid_till, latest first
)

// ChainLink is one order of a renewal chain.
type ChainLink struct {
	ID        int64
	Status    string // "" for an order named by a renewal but not stored
	ValidTill string // "" until the order is issued, or when it is not stored
	RenewedBy int64
}

// The store's roles, each sized for the consumers that need it. One
// concrete store (sqlite, postgres) implements them all: Store.

// CredentialStore is the hot path: every API request makes one call, to
// the cache in front of the store (internal/credcache.Store), which reads
// the store's on a miss.
type CredentialStore interface {
	// FindCredential returns the key with the given ID, its member and,
	// when orderID is not 0, that member's order orderID (nil when the
	// member has no such order: another member's order is never read), in
	// one read. ErrNotFound when there is no such key.
	FindCredential(ctx context.Context, keyID string, orderID int64) (Credential, *Order, error)
}

// MemberStore manages members.
type MemberStore interface {
	// AddMember creates a member; ErrConflict if the name is taken.
	AddMember(ctx context.Context, name string) (Member, error)
	// FindMember returns the member with the name; ErrNotFound if none.
	FindMember(ctx context.Context, name string) (Member, error)
	// Members lists every member by name.
	Members(ctx context.Context) ([]Member, error)
	// SetMemberDisabled disables or re-enables a member. Disabling ends
	// the member's web sessions.
	SetMemberDisabled(ctx context.Context, name string, disabled bool) error
	// SetSelfServiceKeys allows or forbids the member to manage its own
	// API keys on the web page; ErrNotFound if there is no such member.
	SetSelfServiceKeys(ctx context.Context, name string, allowed bool) error
}

// KeyStore manages API keys.
type KeyStore interface {
	// AddKey stores a new key for the named member (k.Member is ignored).
	AddKey(ctx context.Context, member string, k Key) error
	// AddMemberKey stores a new key for the member unless it holds max
	// active keys already (ErrLimit): the count and the insert are one
	// transaction that parallel calls cannot interleave.
	AddMemberKey(ctx context.Context, memberID int64, k Key, max int) error
	// Keys lists the keys of a member, oldest first.
	Keys(ctx context.Context, member string) ([]Key, error)
	// RevokeKey revokes a key by its ID; revoking twice is not an error.
	RevokeKey(ctx context.Context, id string) error
	// RevokeMemberKey revokes a key of the member memberID: ErrNotFound if
	// the member has no key id, so that a member's request can never touch
	// another member's key. Revoking twice is not an error.
	RevokeMemberKey(ctx context.Context, memberID int64, id string) error
}

// OrderReader reads orders and their renewals.
type OrderReader interface {
	// FindOrder returns one order of any member, with its member's name.
	FindOrder(ctx context.Context, id int64) (*Order, error)
	// ListOrders returns the orders q selects (Member is not filled in;
	// Renews is).
	ListOrders(ctx context.Context, q OrderQuery) ([]*Order, error)
	// CountOrders counts the orders q selects, ignoring its paging.
	CountOrders(ctx context.Context, q OrderQuery) (int, error)
	// Certificates returns the certificate histories of those of orders
	// ids that have one, each oldest first (see RecordCertificates).
	Certificates(ctx context.Context, ids []int64) (map[int64][]CertificateEntry, error)
	// RenewalChain returns the renewal chain through order id, oldest
	// first, within the order's member: back through the orders it renewed
	// (the lowest-numbered where two renewed into one), forward through the
	// orders that renewed it. At most MaxRenewalChain links each way;
	// ErrNotFound if the order is not the member's.
	RenewalChain(ctx context.Context, memberID, id int64) ([]ChainLink, error)
}

// OrderStore holds orders and their renewals.
type OrderStore interface {
	OrderReader
	// ImportOrders stores every order for the member in one transaction,
	// with the events of the stored orders it changes (ImportInBatches):
	// all of them, or, on the first error, none. An order that exists
	// already is replaced. It returns how many orders were stored.
	ImportOrders(ctx context.Context, member string, orders iter.Seq2[*Order, error]) (int, error)
	// RecordRenewal records that order newID renewed order oldID (see
	// CheckRenewal), with its order.renewed event, in one transaction.
	RecordRenewal(ctx context.Context, oldID, newID int64) error
}

// AuditStore keeps the audit trail.
type AuditStore interface {
	// AppendAudit adds entries to the audit trail.
	AppendAudit(ctx context.Context, entries []AuditEntry) error
	// Audit lists audit entries, newest first.
	Audit(ctx context.Context, q AuditQuery) ([]AuditEntry, error)
	// PruneAudit deletes the entries older than before, and returns how many.
	PruneAudit(ctx context.Context, before time.Time) (int64, error)
	// KeysLastUsed says when each of the keys last authenticated a call
	// (kept as AppendAudit writes, not on the request path); a key never
	// used is absent from the map.
	KeysLastUsed(ctx context.Context, keyIDs []string) (map[string]time.Time, error)
}

// SessionStore keeps the web page's sessions.
type SessionStore interface {
	// AddSession stores a web session.
	AddSession(ctx context.Context, s Session) error
	// FindSession returns the session with the token hash, with its key's
	// and member's state; ErrNotFound if there is none.
	FindSession(ctx context.Context, tokenHash []byte) (Session, error)
	// DeleteSession ends a session; ending one that is gone is not an error.
	DeleteSession(ctx context.Context, tokenHash []byte) error
	// PruneSessions deletes the sessions expired before now.
	PruneSessions(ctx context.Context, now time.Time) error
}

// InstanceAwaiter is a store whose serving instances may cache, and learn
// of changes a moment after they commit (PostgreSQL).
type InstanceAwaiter interface {
	// AwaitInstances returns once every live instance has applied every
	// change committed before the call, or, when ctx ends first, the
	// names of the live instances that have not confirmed it yet.
	AwaitInstances(ctx context.Context) (unconfirmed []string, err error)
}

// BackupStore is a store that copies itself, while in use, to a new file
// (admin backup): SQLite's. PostgreSQL leaves backups to pg_dump.
type BackupStore interface {
	// Backup copies the store to dst, which must not exist, and with
	// withAudit its audit trail beside it.
	Backup(ctx context.Context, dst string, withAudit bool) error
}

// Pinger reports whether the store can be reached (for /readyz).
type Pinger interface {
	Ping(ctx context.Context) error
}

// LifecycleReader reads what every stored order's next step depends on,
// for the metrics of next steps.
type LifecycleReader interface {
	// Lifecycles returns the lifecycles of up to limit orders numbered
	// above afterID, in order (keyset paging over every member's orders).
	Lifecycles(ctx context.Context, afterID int64, limit int) ([]OrderLifecycle, error)
}

// OrderLifecycle is one order's Lifecycle.
type OrderLifecycle struct {
	ID int64
	Lifecycle
}

// Store is every role, implemented by each backend.
type Store interface {
	CredentialStore
	MemberStore
	KeyStore
	OrderStore
	AuditStore
	SessionStore
	WebhookStore
	NoticeStore
	NoticeRecipientStore
	SyncStore
	LifecycleReader
	CertificateFinder
	Pinger

	// Restore loads an export (see internal/export) into an empty
	// store, in one transaction; ErrConflict if the store holds anything.
	Restore(ctx context.Context, records iter.Seq2[Record, error]) error
	// Close releases the store; every call after it fails with ErrUnavailable.
	Close() error
}

// Errors a Store returns, wrapped with detail; test them with errors.Is.
// Every store classifies its failures by one rule: what a retry may cure
// (the database refused, reset or shut the connection, is restarting or
// out of connections; the store is closed; the deadline passed) is
// ErrUnavailable; anything else not listed here is a bug, reported as it is.
var (
	ErrNotFound    = errors.New("not found")
	ErrConflict    = errors.New("conflict")
	ErrInvalid     = errors.New("invalid")
	ErrUnavailable = errors.New("store unavailable")
	// ErrLimit: the member holds as many as it may already.
	ErrLimit = errors.New("limit reached")
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
