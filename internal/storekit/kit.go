package storekit

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/certorder/certorder"
)

// Kit is what both stores do alike over their databases (DB): each store
// embeds one, so that its methods are the store's, written once. What a
// dialect writes its own way (RETURNING, ON CONFLICT with arrays, SKIP
// LOCKED, the hot path's prepared reads) stays the store's.
type Kit struct {
	Read     TxDB // reads outside a transaction
	Write    TxDB // writes, and their transactions
	Sessions TxDB // the web sessions' table
	AuditDB  TxDB // the audit trail (SQLite: a file of its own)
	// SessionsApart: the sessions' table is in a database of its own
	// (SQLite's file), not to be joined with the members and keys.
	SessionsApart bool
	// Wrap turns a driver error into a store error (the store's rule).
	Wrap func(op string, err error) error
	// The dialect's few words the shared statements need: ForUpdate
	// locks the rows a SELECT reads for its transaction (PostgreSQL's
	// " FOR UPDATE"; "" for SQLite, whose one writer is the lock); InList
	// is the condition that column is one of the list argument, and List
	// makes that argument of a slice (SQLite: json_each of a JSON array;
	// PostgreSQL: = ANY of an array).
	ForUpdate string
	// Greatest is the function of the larger of two values (GREATEST;
	// SQLite's max); NoLimit the argument of LIMIT that sets none.
	Greatest string
	NoLimit  any
	// Joined is the aggregate of a column's values as text joined by
	// commas, %s the column (group_concat; string_agg); InTypes the
	// condition that a stored list of event types (column) holds the
	// argument.
	Joined  string
	InTypes func(column string) string
	// Contains is the store's substring test of the orders' names column
	// (OrderSearch), %s its argument.
	Contains string
	InList   func(column string) string
	List     func(slice any) any
	// LockConfirmations is run in AddNoticeAddress's transaction before
	// the confirmations are counted ("" where the one writer is the lock).
	LockConfirmations string
	// SkipLocked ends the SELECT that takes the order events for the
	// queue (takeEvents): " FOR UPDATE SKIP LOCKED" where instances share
	// the work (PostgreSQL), "" where the one writer is the lock (SQLite).
	SkipLocked string
	// NoticeTargets are the active addresses of the event's member that
	// want it (locked for tx where the store has row locks).
	NoticeTargets func(ctx context.Context, tx DB, ev certorder.Event) ([]certorder.NoticeAddress, error)
	// EndpointTargets are the enabled endpoints of the event's member
	// that want it, none when the member is disabled; WriteEvents writes
	// events in tx (the store's multi-row insert).
	EndpointTargets func(ctx context.Context, tx DB, ev certorder.Event) ([]certorder.Endpoint, error)
	WriteEvents     func(ctx context.Context, tx DB, events []certorder.Event) error
	// ReadAgain runs a read of the API, and once more when the store's
	// connection was gone (PostgreSQL's pool); nil: once.
	ReadAgain func(ctx context.Context, read func() error) error

	certQueries           sync.Once // FindCertificates' queries, in the store's dialect
	memberCerts, allCerts string
}

// oneRow turns a statement that touched no row into ErrNotFound.
func oneRow(n int64, err error, what string) error {
	if err == nil && n == 0 {
		return fmt.Errorf("%w: %s", certorder.ErrNotFound, what)
	}
	return err
}

// notFound turns ErrNoRows into ErrNotFound, with what.
func notFound(err error, what string) error {
	if errors.Is(err, ErrNoRows) {
		return fmt.Errorf("%w: %s", certorder.ErrNotFound, what)
	}
	return err
}

func (k *Kit) readAgain(ctx context.Context, read func() error) error {
	if k.ReadAgain == nil {
		return read()
	}
	return k.ReadAgain(ctx, read)
}

// takeEvents takes up to limit order events whose flag (fanned_out: the
// webhooks'; noticed: the notices') is not set, oldest first, in tx; with
// SKIP LOCKED, those another instance took are left to it.
func (k *Kit) takeEvents(ctx context.Context, tx DB, flag string, limit int) ([]certorder.Event, error) {
	return Query(ctx, tx, func(row Row) (certorder.Event, error) { return ScanEvent(row) },
		`SELECT id, member_id, type, data, at FROM webhook_events WHERE NOT `+flag+` ORDER BY id LIMIT ?`+k.SkipLocked, limit)
}
