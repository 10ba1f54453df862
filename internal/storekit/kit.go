package storekit

import (
	"errors"
	"fmt"

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
	// SessionsApart: the sessions' table is in a database of its own
	// (SQLite's file), not to be joined with the members and keys.
	SessionsApart bool
	// Wrap turns a driver error into a store error (the store's rule).
	Wrap func(op string, err error) error
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
