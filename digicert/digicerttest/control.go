package digicerttest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/certorder/certorder/internal/acmeurl"
)

// The simulator's control endpoint, its own and not CertCentral's: a
// running simulator ("certorder dev simulator") changes an order when
// asked ("certorder dev simulate"), as CertCentral's users and its
// validation would, so that a sync, or the webhook, has a change to see.
//
//	POST ControlPath + "{order}/{action}"   body {"pending": false}
//
// answers 200 with the Change made, or an error {"error": "..."}: 404 for
// an unknown order or action, 409 for a change the order's state does not
// allow. It takes no API key and counts against no rate limit; it answers
// only requests addressed to a loopback host with a JSON body (so that no
// web page can make a browser send one: that needs a CORS preflight the
// simulator never grants).
const ControlPath = "/simulator/v1/orders/"

// The changes Simulate makes.
const (
	// SimulateIssue issues a pending order's certificate, or a pending
	// reissue's: status issued, a serial number and dates (event
	// certificate_issued).
	SimulateIssue = "issue"
	// SimulateRevoke revokes an issued order's certificate: status
	// revoked (event certificate_revoked).
	SimulateRevoke = "revoke"
	// SimulateReissue reissues an issued order's certificate within its
	// plan: the same order, a new certificate ID, issued at once (event
	// certificate_issued), or left reissue_pending with pending.
	SimulateReissue = "reissue"
	// SimulateRenew places the renewal of an issued order: a new order
	// that replaces it (the old one gets is_renewed and renewed_order_id),
	// issued at once (event certificate_issued), or left pending with
	// pending.
	SimulateRenew = "renew"
)

// SimulateActions are the changes, in the order the usage lists them.
var SimulateActions = []string{SimulateIssue, SimulateRevoke, SimulateReissue, SimulateRenew}

// Change is what Simulate did. The certificate fields are those of the
// order whose certificate changed: the renewal's for renew, else the
// order's.
type Change struct {
	Action  string `json:"action"`
	OrderID int64  `json:"order_id"`
	// RenewalID is the new order of a renew.
	RenewalID     int64  `json:"renewal_order_id,omitempty"`
	Status        string `json:"status"`
	CertificateID int64  `json:"certificate_id"`
	SerialNumber  string `json:"serial_number,omitempty"` // "" until issued
	ValidTill     string `json:"valid_till,omitempty"`
	// Event is the CertCentral event queued for the account's webhook and
	// EventEndpoint where it goes; NoEvent says why none was, when none was.
	Event         string `json:"event,omitempty"`
	EventEndpoint string `json:"event_endpoint,omitempty"`
	NoEvent       string `json:"no_event,omitempty"`
}

var (
	errNoOrder       = errors.New("no order")
	errUnknownAction = errors.New("no such change")
)

// Simulate makes one change to order id at the simulator's now, as
// CertCentral would (see the Simulate* constants), and announces it to
// the account's webhook when CertCentral sends an event for it. pending
// leaves a reissue or a renewal waiting for SimulateIssue; the others
// ignore it. Options.OnChange is told of every change made.
func (s *Server) Simulate(action string, id int64, pending bool) (Change, error) {
	s.mu.Lock()
	c, err := s.simulate(action, id, pending)
	onChange := s.onChange
	s.mu.Unlock()
	if err != nil {
		return Change{}, fmt.Errorf("digicerttest: %w", err)
	}
	if onChange != nil {
		onChange(c)
	}
	return c, nil
}

func (s *Server) simulate(action string, id int64, pending bool) (Change, error) {
	o, ok := s.orders[id]
	if !ok {
		return Change{}, fmt.Errorf("%w %d", errNoOrder, id)
	}
	now := s.now()
	c := Change{Action: action, OrderID: id}
	changed := o // the order whose certificate changes
	before := *o
	switch action {
	case SimulateIssue:
		if o.status != "pending" && o.status != "reissue_pending" {
			return c, fmt.Errorf("order %d is %s: only a pending order, or a pending reissue, is issued", id, o.status)
		}
		s.issue(o, now)
	case SimulateRevoke:
		if o.status != "issued" {
			return c, fmt.Errorf("order %d is %s: only an issued certificate is revoked", id, o.status)
		}
		o.status, o.statusChanged = "revoked", now.UTC().Truncate(time.Second)
	case SimulateReissue:
		if o.status != "issued" {
			return c, fmt.Errorf("order %d is %s: only an issued order's certificate is reissued", id, o.status)
		}
		if err := s.reissue(o, now); err != nil {
			return c, err
		}
		if !pending {
			s.issue(o, now)
		}
	case SimulateRenew:
		if o.status != "issued" && o.status != "expired" {
			return c, fmt.Errorf("order %d is %s: only an order whose certificate was issued is renewed", id, o.status)
		}
		renewal, err := s.renew(id, 0, now)
		if err != nil {
			return c, err
		}
		c.RenewalID = renewal
		changed = s.orders[renewal]
		before = *changed
		if !pending {
			s.issue(changed, now)
		}
	default:
		return c, fmt.Errorf("%w %q: want one of %s", errUnknownAction, action, strings.Join(SimulateActions, ", "))
	}
	c.Event, c.EventEndpoint, c.NoEvent = s.announce(changed, before)
	switch {
	case changed.status == "reissue_pending":
		c.NoEvent = "CertCentral sends none for a reissue started, only certificate_issued once it is issued"
	case changed.status == "pending":
		c.NoEvent = "CertCentral sends none for an order placed, only certificate_issued once it is issued"
	}
	c.Status, c.CertificateID, c.SerialNumber = changed.status, changed.certID, changed.sern
	if changed.issuedYet() {
		c.ValidTill = date(changed.validTill)
	}
	return c, nil
}

// serveControl answers a request to ControlPath.
func (s *Server) serveControl(w http.ResponseWriter, r *http.Request) {
	fail := func(status int, format string, args ...any) {
		writeJSON(w, status, map[string]string{"error": fmt.Sprintf(format, args...)})
	}
	host, _, err := net.SplitHostPort(r.Host)
	if err != nil {
		host = r.Host
	}
	if !acmeurl.Loopback(host) {
		fail(http.StatusForbidden, "the simulator takes commands addressed to a loopback host only, not %q", r.Host)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		fail(http.StatusMethodNotAllowed, "POST a command")
		return
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		fail(http.StatusUnsupportedMediaType, "a command's body is JSON (Content-Type: application/json)")
		return
	}
	idText, action, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, ControlPath), "/")
	id, err := strconv.ParseInt(idText, 10, 64)
	if err != nil || id <= 0 {
		fail(http.StatusNotFound, "want %s{order number}/{%s}", ControlPath, strings.Join(SimulateActions, "|"))
		return
	}
	var body struct {
		Pending bool `json:"pending"`
	}
	dec := json.NewDecoder(io.LimitReader(r.Body, 4<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		fail(http.StatusBadRequest, "the body is not {\"pending\": true|false}: %v", err)
		return
	}
	c, err := s.Simulate(action, id, body.Pending)
	switch {
	case errors.Is(err, errNoOrder), errors.Is(err, errUnknownAction):
		fail(http.StatusNotFound, "%s", strings.TrimPrefix(err.Error(), "digicerttest: "))
	case err != nil:
		fail(http.StatusConflict, "%s", strings.TrimPrefix(err.Error(), "digicerttest: "))
	default:
		writeJSON(w, http.StatusOK, c)
	}
}
