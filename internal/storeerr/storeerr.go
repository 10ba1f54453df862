// Package storeerr is the one rule by which every store classifies its
// failures (see certorder.ErrUnavailable): what a retry may cure is
// unavailable (HTTP 503, Error(150)); anything else is a bug (500).
package storeerr

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"

	"github.com/certorder/certorder"
)

// Wrap turns a store's failure in op into a store error. Domain errors
// (certorder.ErrNotFound, ...) and a cancelled context pass through. The
// store is unavailable when it is closed, the deadline passed, the network
// failed (refused, reset, closed, timed out, cut short), or driver says so
// of the driver's own error (a database shutting down, refusing or out of
// connections). Anything else is reported as it is, an internal error.
func Wrap(op string, err error, closed bool, driver func(error) bool) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, certorder.ErrNotFound), errors.Is(err, certorder.ErrConflict),
		errors.Is(err, certorder.ErrInvalid), errors.Is(err, certorder.ErrUnavailable),
		errors.Is(err, context.Canceled):
		return fmt.Errorf("%s: %w", op, err)
	case closed:
		return fmt.Errorf("%s: %w: the store is closed", op, certorder.ErrUnavailable)
	case errors.Is(err, context.DeadlineExceeded), network(err), driver(err):
		return fmt.Errorf("%s: %w: %w", op, certorder.ErrUnavailable, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// network reports a failure of the connection to the database.
func network(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, syscall.ECONNREFUSED) || ConnCut(err)
}

// ConnCut reports whether err says that an open connection was cut: end
// of file, reset, broken pipe, closed.
func ConnCut(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}
