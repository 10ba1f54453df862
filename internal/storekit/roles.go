package storekit

import (
	"context"
	"iter"
	"time"

	"github.com/certorder/certorder"
)

// The store's roles, each sized for the consumers that need it. One
// concrete store (sqlite, postgres) implements them all
// (internal/storekit.Store).

// CredentialStore is the hot path: every API request makes one call, to
// the cache in front of the store (internal/credcache.Store), which reads
// the store's on a miss.
type CredentialStore interface {
	// FindCredential returns the key with the given ID, its member and,
	// when orderID is not 0, that member's order orderID (nil when the
	// member has no such order: another member's order is never read), in
	// one read. ErrNotFound when there is no such key.
	FindCredential(ctx context.Context, keyID string, orderID int64) (certorder.Credential, *certorder.Order, error)
}

// MemberStore manages members.
type MemberStore interface {
	// AddMember creates a member; ErrConflict if the name is taken.
	AddMember(ctx context.Context, name string) (certorder.Member, error)
	// FindMember returns the member with the name; ErrNotFound if none.
	FindMember(ctx context.Context, name string) (certorder.Member, error)
	// Members lists every member by name.
	Members(ctx context.Context) ([]certorder.Member, error)
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
	AddKey(ctx context.Context, member string, k certorder.Key) error
	// AddMemberKey stores a new key for the member unless it holds max
	// active keys already (ErrLimit): the count and the insert are one
	// transaction that parallel calls cannot interleave.
	AddMemberKey(ctx context.Context, memberID int64, k certorder.Key, max int) error
	// Keys lists the keys of a member, oldest first.
	Keys(ctx context.Context, member string) ([]certorder.Key, error)
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
	FindOrder(ctx context.Context, id int64) (*certorder.Order, error)
	// ListOrders returns the orders q selects (Member is not filled in;
	// Renews is).
	ListOrders(ctx context.Context, q certorder.OrderQuery) ([]*certorder.Order, error)
	// CountOrders counts the orders q selects, ignoring its paging.
	CountOrders(ctx context.Context, q certorder.OrderQuery) (int, error)
	// Certificates returns the certificate histories of those of orders
	// ids that have one, each oldest first (see RecordCertificates).
	Certificates(ctx context.Context, ids []int64) (map[int64][]certorder.CertificateEntry, error)
	// RenewalChain returns the renewal chain through order id, oldest
	// first, within the order's member: back through the orders it renewed
	// (the lowest-numbered where two renewed into one), forward through the
	// orders that renewed it. At most MaxRenewalChain links each way;
	// ErrNotFound if the order is not the member's.
	RenewalChain(ctx context.Context, memberID, id int64) ([]certorder.ChainLink, error)
}

// OrderStore holds orders and their renewals.
type OrderStore interface {
	OrderReader
	// ImportOrders stores every order for the member in one transaction,
	// with the events of the stored orders it changes (ImportInBatches):
	// all of them, or, on the first error, none. An order that exists
	// already is replaced. It returns how many orders were stored.
	ImportOrders(ctx context.Context, member string, orders iter.Seq2[*certorder.Order, error]) (int, error)
	// RecordRenewal records that order newID renewed order oldID (see
	// CheckRenewal), with its order.renewed event, in one transaction.
	RecordRenewal(ctx context.Context, oldID, newID int64) error
}

// AuditStore keeps the audit trail.
type AuditStore interface {
	// AppendAudit adds entries to the audit trail.
	AppendAudit(ctx context.Context, entries []certorder.AuditEntry) error
	// Audit lists audit entries, newest first.
	Audit(ctx context.Context, q certorder.AuditQuery) ([]certorder.AuditEntry, error)
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
	AddSession(ctx context.Context, s certorder.Session) error
	// FindSession returns the session with the token hash, with its key's
	// and member's state; ErrNotFound if there is none.
	FindSession(ctx context.Context, tokenHash []byte) (certorder.Session, error)
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

// Record is one item of an export (see internal/export): exactly one of its fields is set.
// Key.Member, Link.Member, Order.Member, Endpoint.Member and Notice.Member name the owner.
type Record struct {
	Member   *certorder.Member
	Key      *certorder.Key
	Link     *certorder.ContainerLink
	Order    *certorder.Order
	History  []certorder.Certificate // with Order: its certificate history, oldest first, as exported
	Endpoint *certorder.Endpoint
	Notice   *certorder.NoticeAddress
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
	Endpoints(ctx context.Context, member string) ([]certorder.Endpoint, error)
	// AddMemberEndpoint is AddEndpoint for the member, unless it holds max
	// endpoints already (ErrLimit), atomically as AddMemberKey.
	AddMemberEndpoint(ctx context.Context, memberID int64, e certorder.Endpoint, max int) (certorder.Endpoint, error)
	// MemberEndpoint returns the member's endpoint id.
	MemberEndpoint(ctx context.Context, memberID, id int64) (certorder.Endpoint, error)
	// SetMemberEndpointEnabled enables the member's endpoint id (clearing
	// its failure) or disables it, saying why.
	SetMemberEndpointEnabled(ctx context.Context, memberID, id int64, enabled bool, reason string) error
	// DeleteMemberEndpoint deletes the member's endpoint id and its deliveries.
	DeleteMemberEndpoint(ctx context.Context, memberID, id int64) error
}

// EndpointAdmin is what the operator does with endpoints beyond a
// member's calls: reach any endpoint by its ID (admin webhook ...).
type EndpointAdmin interface {
	// AddEndpoint stores a new endpoint of the named member; e.ID, MemberID,
	// CreatedAt are filled in.
	AddEndpoint(ctx context.Context, member string, e certorder.Endpoint) (certorder.Endpoint, error)
	// FindEndpoint returns one endpoint; ErrNotFound if none.
	FindEndpoint(ctx context.Context, id int64) (certorder.Endpoint, error)
	// RotateSecret makes secret the endpoint's, the current one staying
	// valid (and signed with) until previousUntil.
	RotateSecret(ctx context.Context, id int64, secret string, previousUntil time.Time) error
	// DeleteEndpoint deletes an endpoint and its deliveries.
	DeleteEndpoint(ctx context.Context, id int64) error
}

// MemberNoticeStore is what the web page and the operator do with notice
// addresses. The Member... calls are scoped to memberID in the store's
// query, as MemberWebhookStore's.
type MemberNoticeStore interface {
	// NoticeAddresses lists the member's addresses, oldest first.
	NoticeAddresses(ctx context.Context, memberID int64) ([]certorder.NoticeAddress, error)
	// AddNoticeAddress stores a new address of the member unless it holds
	// max already (ErrLimit) or has this address (ErrConflict), atomically
	// as AddMemberKey. One not confirmed (a.ConfirmedAt zero) gets its
	// confirmation message queued in the same transaction.
	AddNoticeAddress(ctx context.Context, memberID int64, a certorder.NoticeAddress, max int) (certorder.NoticeAddress, error)
	// MemberNoticeAddress returns the member's address id.
	MemberNoticeAddress(ctx context.Context, memberID, id int64) (certorder.NoticeAddress, error)
	// SetMemberNoticeAddress changes the language and events of the member's address id.
	SetMemberNoticeAddress(ctx context.Context, memberID, id int64, lang string, events []string) error
	// DeleteMemberNoticeAddress deletes the member's address id and its messages.
	DeleteMemberNoticeAddress(ctx context.Context, memberID, id int64) error
	// FindNoticeAddress returns an address by its ID alone, for the links
	// in a message (whose signature package notice checks) and the operator.
	FindNoticeAddress(ctx context.Context, id int64) (certorder.NoticeAddress, error)
	// ConfirmNoticeAddress confirms address id at at; ErrConflict if it
	// is confirmed already (a confirmation link works once).
	ConfirmNoticeAddress(ctx context.Context, id int64, at time.Time) error
	// UnsubscribeNoticeAddress stops the messages to address id (its
	// pending ones too); unsubscribing twice is not an error.
	UnsubscribeNoticeAddress(ctx context.Context, id int64, at time.Time) error
}

// CertificateFinder finds certificates in the orders' histories
// (CertificateCheck, certorder find-certificate).
type CertificateFinder interface {
	// FindCertificates returns the certificates q asks for, in one
	// statement through the key indexes, ordered by order number and
	// history. Another member's
	// certificate is never read when q.MemberID is set, so that it looks
	// exactly like one that is not stored. A serial or thumbprint recorded
	// on several orders gives a match for each.
	FindCertificates(ctx context.Context, q certorder.CertificateQuery) ([]certorder.CertificateMatch, error)
}

// EventWriter writes order events (certorder.Event) in the transaction of
// the change that causes them, so that they commit, and roll back, with it.
type EventWriter interface {
	AddEvents(ctx context.Context, events []certorder.Event) error
}
