// Package certorder is the ground floor of the certificate-order lookup
// service: the domain. Its types (members, API keys, web sessions, orders
// as stored with their certificates, plans, statuses and renewals, the
// next step, audit entries, division links, webhook endpoints, notice
// addresses, the order events), the rules that hold above every store (the
// import's, CheckImport; the renewals', CheckRenewal; the events an order
// change makes, OrderChange.Events; the certificate histories',
// PlanCertificates; the next step, Windows.Next), and the errors a
// store returns.
//
// It imports the standard library only; every other package of the module
// may import it. The stores' roles and protocols are internal/storekit's,
// the queue of later work package queue's, reading an order document
// internal/orderdoc's, the wire protocol wire/'s, storage sqlite/'s and
// postgres/'s, HTTP server/'s, the sync's ownership rules ccsync's; each
// consumer declares the store interface it uses where it uses it.
package certorder

import (
	"errors"
	"fmt"
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

// Errors a store returns, wrapped with detail; test them with errors.Is.
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
