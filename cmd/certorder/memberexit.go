package main

// What a member command's failure means: its exit code, and the words that
// say what to do about it.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"

	"github.com/certorder/certorder/client"
)

// Exit codes of the member commands, beside exitFailure and exitUsage.
const (
	exitCredentials = 3 // credentials rejected
	exitNoSuchOrder = 4 // no such order
	exitNotRenewed  = 5 // renew-check: the order has not been renewed
	exitUnreachable = 6 // network, server or rate-limit trouble: try again later
	exitOrderEnded  = 7 // current: the newest order of the chain is canceled or rejected
	exitReplaced    = 8 // deployed: a server serves a replaced or renewed order's certificate, or one ending soon
)

// memberExit gives a client error its documented exit code, and says in
// words what it means for the command that met it.
func memberExit(err error, cmd string, id int64, endpoint, name string) error {
	if err == nil {
		return nil
	}
	var apiErr *client.APIError
	var httpErr *client.HTTPError
	errors.As(err, &apiErr)
	errors.As(err, &httpErr)
	wait := "try again later"
	if apiErr != nil && apiErr.RetryAfter > 0 {
		wait = fmt.Sprintf("the service asks to wait %s before trying again", apiErr.RetryAfter)
	}
	_, bare := err.(*client.APIError)
	code, msg := exitFailure, err
	switch {
	case wrongEndpoint(apiErr, httpErr):
		code = exitUsage
		// What answered, in a few words: the page itself (HTML, quoted)
		// would bury the advice.
		answered := `"Error(102) path is failed.", no endpoint at that path`
		if httpErr != nil {
			answered = fmt.Sprintf("HTTP %d and %s", httpErr.Status, pageKind(httpErr.Body))
		}
		msg = fmt.Errorf("%s does not answer as the service's endpoint (it answered %s): the URL probably lacks /api/<segment>/ "+
			"or names another segment (for example https://host/api/digicert/); check --url or CERTORDER_URL", endpoint, answered)
	case errors.Is(err, client.ErrCredentialsRejected):
		code = exitCredentials
		msg = fmt.Errorf("credentials rejected for AccessName %s: a wrong name or key, a revoked key or a disabled member (%w)", name, err)
	case errors.Is(err, client.ErrNotRenewed):
		code = exitNotRenewed
		msg = fmt.Errorf("order %d has not been renewed (%w)", id, err)
	case errors.Is(err, client.ErrNoSuchCertificate):
		code = exitNoSuchOrder
		msg = fmt.Errorf("%w: it is not a certificate of member %s's orders (another CA's, or another member's)", err, name)
	case errors.Is(err, client.ErrNoSuchOrder):
		code = exitNoSuchOrder
		msg = fmt.Errorf("no such order: %d is not an order of member %s (%w)", id, name, err)
		if (cmd == "current" || cmd == "acme-url") && !bare {
			// The chain led to an order that is missing; the error names it.
			msg = fmt.Errorf("following the renewals of order %d: %w", id, err)
		}
	case errors.Is(err, client.ErrOrderEnded):
		code = exitOrderEnded
		msg = fmt.Errorf("%w: it will never be issued; do not point automation at it", err)
	case errors.Is(err, client.ErrBadChain):
		code = exitFailure // asking again would meet the same chain
	case errors.Is(err, client.ErrRateLimited):
		code = exitUnreachable
		msg = fmt.Errorf("too many requests or failed sign-ins: %s (%w)", wait, err)
	case errors.Is(err, client.ErrUnavailable):
		code = exitUnreachable
		msg = fmt.Errorf("the service is unavailable for now: %s (%w)", wait, err)
	case apiErr != nil:
		if apiErr.Status >= 500 {
			code = exitUnreachable
		}
	case httpErr != nil: // an answer that is not the service's: a proxy's, or a server's in between
		code = exitUnreachable
	default: // no answer: network or time-out trouble
		code = exitUnreachable
		msg = fmt.Errorf("no answer from %s: %s (%w)", endpoint, unreachable(err), err)
	}
	return &exitErr{code: code, err: msg}
}

// unreachable says what a request that got no answer met, and what to
// check or do.
func unreachable(err error) string {
	var dnsErr *net.DNSError
	var opErr *net.OpError
	switch {
	case errors.Is(err, context.Canceled):
		return "interrupted"
	// What the last attempt met comes before --timeout, which may have
	// ended the retries of a refused connection.
	case errors.As(err, &dnsErr):
		return fmt.Sprintf("the host name %s is not found; check --url (or CERTORDER_URL) and this machine's DNS", dnsErr.Name)
	case errors.Is(err, syscall.ECONNREFUSED):
		return "nothing listens there; check that the service (certorder serve) runs on that host and port, " +
			"and that --url (or CERTORDER_URL) names them"
	case errors.Is(err, context.DeadlineExceeded):
		return "it did not answer within --timeout; the service or the network is slow or overloaded: try again later, or with a longer --timeout"
	case errors.As(err, &opErr) && opErr.Op == "dial":
		return "it cannot be connected to; check --url (or CERTORDER_URL), the network and any firewall between"
	}
	return "the connection failed; check the network and --url (or CERTORDER_URL), then try again"
}

// pageKind names what a body that is not the service's JSON looks like.
func pageKind(body string) string {
	b := strings.ToLower(strings.TrimSpace(body))
	switch {
	case b == "":
		return "no body"
	case strings.HasPrefix(b, "<!doctype html") || strings.HasPrefix(b, "<html"):
		return "an HTML page"
	}
	return "a body that is not JSON"
}

// wrongEndpoint reports whether an answer says the URL is not the
// endpoint: the service's "path is failed", or a 404, 405 or HTML page
// (a web site's, or certorder's own member page at the base URL). A 5xx
// HTML page is a proxy's trouble, not a wrong URL.
func wrongEndpoint(apiErr *client.APIError, httpErr *client.HTTPError) bool {
	const numPath = 102 // certorder's "path is failed." (docs/API.md)
	if apiErr != nil {
		return apiErr.Number == numPath
	}
	if httpErr == nil || httpErr.Status >= 500 {
		return false
	}
	return httpErr.Status == 404 || httpErr.Status == 405 || pageKind(httpErr.Body) == "an HTML page"
}
