// Package acmegate is a test ACME server that plays DigiCert's part for
// certorder's members: Pebble (the ACME test server of Let's Encrypt, run
// in-process, external account binding required) behind a gate that does
// what DigiCert's ACME directory URL does with its parameters.
//
// It is a simulator of a third party, built from these pages only:
//
//   - DigiCert, "ACME automation actions and URL parameters"
//     (docs.digicert.com, CertCentral > Certificate tools > ACME): the
//     directory URL .../acme/v2/directory carries action (enroll, renew,
//     reissue, duplicate) and orderId (the existing order the action is on).
//   - RFC 8555 (ACME): the directory (7.1.1), the problem documents and
//     their types (6.7; urn:ietf:params:acme:error:unauthorized), external
//     account binding (7.3.4), the JWS "url" header a server checks (6.4).
//
// What DigiCert does with a stale order number is not published; the gate
// does what certorder's members must be ready for: a directory URL whose
// order has been renewed is refused with an RFC 8555 problem document
// (unauthorized, HTTP 403) that names the newer order, which it learns by
// asking certorder itself through the member API (package client).
//
// The directory's URLs keep routing through the gate, each carrying the
// order: the gate rewrites Pebble's directory so that newNonce, newAccount,
// newOrder, revokeCert, keyChange and renewalInfo read
// https://HOST/gate/ORDERID/ACTION/<pebble's path>. A query parameter would
// not do: Pebble checks each request's JWS "url" against https://Host plus
// the request URI taken as a path, where "?" would not match. The gate
// routes on the path with the prefix cut and leaves the request URI as
// the client signed it. Pebble's untagged entry points (its own /dir,
// newAccount and newOrder) are refused, so no certificate is issued
// without an order number. The URLs Pebble hands out later (orders,
// authorizations, finalize, certificates) reach Pebble through the gate
// unchanged; each finalize is recorded with the order number its ACME
// order was created under.
package acmegate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/letsencrypt/pebble/v2/ca"
	"github.com/letsencrypt/pebble/v2/db"
	"github.com/letsencrypt/pebble/v2/va"
	"github.com/letsencrypt/pebble/v2/wfe"

	"github.com/certorder/certorder/client"
)

// DirectoryPath is where the gate answers the directory, as on DigiCert.
const DirectoryPath = "/mpki/api/v1/acme/v2/directory"

// StatusPath answers what the gate has seen, as JSON: the issuances, the
// refusals and the number of accounts registered (for scripts; tests call
// the methods).
const StatusPath = "/gate-status"

// tagPrefix starts the path of every URL of the rewritten directory.
const tagPrefix = "/gate/"

// Actions are the values of the directory URL's action parameter.
var Actions = []string{"enroll", "renew", "reissue", "duplicate"}

// Pebble's paths (wfe's constants, most of them unexported).
const (
	pebbleDirectory  = "/dir"
	pebbleNewAccount = "/sign-me-up"
	pebbleNewOrder   = "/order-plz"
	pebbleFinalize   = "/finalize-order/"
	pebbleKeyChange  = "/rollover-account-key"
	pebbleRevoke     = "/revoke-cert"
	pebbleChallenge  = "/chalZ/"
)

// Config sets a Gate up.
type Config struct {
	// Members asks certorder about orders, with the credentials of the
	// member whose orders the ACME account may use.
	Members *client.Client
	// EAB is the external account binding keys: key ID to the
	// base64url-encoded HMAC key. newAccount requires one of them.
	EAB map[string]string
	// HTTPPort is the port Pebble's validation authority fetches http-01
	// challenges from (on the identifier's address). Default 5002.
	HTTPPort int
	// Log receives Pebble's log (which names no key); nil discards it.
	Log *log.Logger
}

// Issuance is one ACME order finalized: a certificate issued under
// certorder order OrderID with Action, as the directory URL said.
type Issuance struct {
	OrderID   int64  `json:"orderId"`
	Action    string `json:"action"`
	ACMEOrder string `json:"acmeOrder"` // Pebble's order ID
}

// Refusal is one request refused because its order was stale or unusable.
type Refusal struct {
	OrderID int64  `json:"orderId"`
	Newest  int64  `json:"newest"` // the newest order of its chain; 0 if none
	Detail  string `json:"detail"`
}

// Gate is the http.Handler in front of Pebble. Serve it over TLS (Pebble
// builds its URLs as https).
type Gate struct {
	members *client.Client
	pebble  http.Handler
	ca      *ca.CAImpl

	mu        sync.Mutex
	tags      map[string]tag // Pebble order ID -> the order it was created under
	issuances []Issuance
	refusals  []Refusal
	accounts  int // newAccount answers 201 Created: accounts registered
}

type tag struct {
	orderID int64
	action  string
}

// New starts Pebble's parts and returns the gate in front of them.
// Pebble's own environment variables apply (PEBBLE_VA_NOSLEEP,
// PEBBLE_VA_ALWAYS_VALID, ...).
func New(cfg Config) (*Gate, error) {
	if cfg.Members == nil {
		return nil, errors.New("acmegate: Config.Members is required")
	}
	if len(cfg.EAB) == 0 {
		return nil, errors.New("acmegate: at least one external account binding key is required")
	}
	logger := cfg.Log
	if logger == nil {
		logger = log.New(io.Discard, "", 0)
	}
	port := cfg.HTTPPort
	if port == 0 {
		port = 5002
	}
	store := db.NewMemoryStore()
	authority := ca.New(logger, store, "", "ecdsa", 0, 1, map[string]ca.Profile{"default": {Description: "the default profile"}})
	validator := va.New(logger, port, 5001, false, "", store)
	for kid, key := range cfg.EAB {
		if err := store.AddExternalAccountKeyByID(kid, key); err != nil {
			return nil, fmt.Errorf("acmegate: external account key %s: %w", kid, err)
		}
	}
	front := wfe.New(logger, store, validator, authority, []string{"pebble.letsencrypt.org"}, false, true, 0, 0)
	return &Gate{members: cfg.Members, pebble: front.Handler(), ca: authority, tags: map[string]tag{}}, nil
}

// RootPEM is the PEM of the root that Pebble's certificates chain to.
func (g *Gate) RootPEM() []byte { return g.ca.GetRootCert(0).PEM() }

// Issuances lists the ACME orders finalized so far, oldest first.
func (g *Gate) Issuances() []Issuance {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.issuances)
}

// Refusals lists the requests refused so far, oldest first.
func (g *Gate) Refusals() []Refusal {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.refusals)
}

// Accounts is how many ACME accounts have been registered (newAccount
// answered 201 Created; an existing key's 200 does not count).
func (g *Gate) Accounts() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.accounts
}

func (g *Gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	switch {
	case p == DirectoryPath:
		g.directory(w, r)
	case p == StatusPath && r.Method == http.MethodGet:
		g.status(w)
	case strings.HasPrefix(p, tagPrefix):
		g.tagged(w, r)
	case p == pebbleDirectory || p == pebbleNewAccount || p == pebbleNewOrder || p == pebbleKeyChange || p == pebbleRevoke:
		problem(w, http.StatusForbidden, "unauthorized",
			"use the directory URL "+DirectoryPath+"?action=...&orderId=... (DigiCert's parameters)")
	case strings.HasPrefix(p, pebbleFinalize) && r.Method == http.MethodPost:
		cw := &captureWriter{ResponseWriter: w}
		g.pebble.ServeHTTP(cw, r)
		if cw.status == http.StatusOK {
			id := strings.TrimPrefix(p, pebbleFinalize)
			g.mu.Lock()
			t := g.tags[id]
			g.issuances = append(g.issuances, Issuance{OrderID: t.orderID, Action: t.action, ACMEOrder: id})
			g.mu.Unlock()
		}
	case strings.HasPrefix(p, pebbleChallenge) && r.Method == http.MethodPost:
		// The answer to a challenge says when to ask again (Retry-After,
		// RFC 8555's way): Pebble says nothing there, and lego then waits
		// its default 5 s before asking (TestACMEWithLego 7.6 -> 0.5-2.3 s).
		w.Header().Set("Retry-After", "1")
		g.pebble.ServeHTTP(w, r)
	default:
		g.pebble.ServeHTTP(w, r)
	}
}

func (g *Gate) status(w http.ResponseWriter) {
	g.mu.Lock()
	st := struct {
		Issuances []Issuance `json:"issuances"`
		Refusals  []Refusal  `json:"refusals"`
		Accounts  int        `json:"accounts"`
	}{slices.Clone(g.issuances), slices.Clone(g.refusals), g.accounts}
	g.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(st)
}

// directory answers the directory URL: refused if its order is stale,
// else Pebble's directory with every URL tagged with the order.
func (g *Gate) directory(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if len(q["orderId"]) != 1 {
		problem(w, http.StatusBadRequest, "malformed", "the directory URL needs one orderId parameter (DigiCert: the existing order)")
		return
	}
	id, err := strconv.ParseInt(q.Get("orderId"), 10, 64)
	if err != nil || id <= 0 {
		problem(w, http.StatusBadRequest, "malformed", fmt.Sprintf("orderId %q is not an order number", q.Get("orderId")))
		return
	}
	action := q.Get("action")
	if action != "" && !slices.Contains(Actions, action) {
		problem(w, http.StatusBadRequest, "malformed", fmt.Sprintf("action %q is not one of %s", action, strings.Join(Actions, ", ")))
		return
	}
	if !g.check(w, r.Context(), id) {
		return
	}
	pr := r.Clone(r.Context())
	pr.URL.Path, pr.URL.RawPath, pr.URL.RawQuery, pr.RequestURI = pebbleDirectory, "", "", pebbleDirectory
	rec := httptest.NewRecorder()
	g.pebble.ServeHTTP(rec, pr)
	var dir map[string]any
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &dir) != nil {
		problem(w, http.StatusInternalServerError, "serverInternal", "the ACME server's directory is unreadable")
		return
	}
	base := "https://" + r.Host
	seg := action
	if seg == "" {
		seg = "-"
	}
	for k, v := range dir {
		if s, ok := v.(string); ok && strings.HasPrefix(s, base+"/") {
			dir[k] = base + tagPrefix + strconv.FormatInt(id, 10) + "/" + seg + strings.TrimPrefix(s, base)
		}
	}
	out, _ := json.MarshalIndent(dir, "", "  ")
	for k, vs := range rec.Header() {
		w.Header()[k] = vs
	}
	w.Header().Del("Content-Length")
	w.WriteHeader(http.StatusOK)
	w.Write(out)
}

// tagged serves /gate/ORDERID/ACTION/<pebble path>: Pebble routes on its
// own path, and checks the JWS url against the request URI, left as sent.
func (g *Gate) tagged(w http.ResponseWriter, r *http.Request) {
	parts := strings.SplitN(strings.TrimPrefix(r.URL.Path, tagPrefix), "/", 3)
	if len(parts) != 3 {
		http.NotFound(w, r)
		return
	}
	id, err := strconv.ParseInt(parts[0], 10, 64)
	if err != nil || id <= 0 {
		http.NotFound(w, r)
		return
	}
	action := parts[1]
	if action == "-" {
		action = ""
	}
	rest := path.Clean("/" + parts[2])
	if (rest == pebbleNewOrder || rest == pebbleNewAccount) && !g.check(w, r.Context(), id) {
		return // a directory fetched before the renewal, used after it
	}
	pr := r.Clone(r.Context())
	pr.URL.Path, pr.URL.RawPath = rest, ""
	cw := &captureWriter{ResponseWriter: w}
	g.pebble.ServeHTTP(cw, pr)
	if cw.status != http.StatusCreated {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	switch rest {
	case pebbleNewAccount:
		g.accounts++
	case pebbleNewOrder:
		loc := cw.Header().Get("Location")
		g.tags[loc[strings.LastIndexByte(loc, '/')+1:]] = tag{orderID: id, action: action}
	}
}

// check asks certorder whether order id is the newest of its chain and
// usable; if not, it answers the problem and returns false.
func (g *Gate) check(w http.ResponseWriter, ctx context.Context, id int64) bool {
	cur, err := g.members.Current(ctx, id)
	var ended *client.EndedError
	refuse := func(newest int64, detail string) bool {
		g.mu.Lock()
		g.refusals = append(g.refusals, Refusal{OrderID: id, Newest: newest, Detail: detail})
		g.mu.Unlock()
		problem(w, http.StatusForbidden, "unauthorized", detail)
		return false
	}
	switch {
	case errors.As(err, &ended):
		return refuse(ended.Order.OrderID, fmt.Sprintf("order %d cannot be used: %v", id, err))
	case errors.Is(err, client.ErrNoSuchOrder):
		return refuse(0, fmt.Sprintf("order %d is not an order of this account", id))
	case err != nil:
		problem(w, http.StatusServiceUnavailable, "serverInternal", "cannot check the order now; try again later")
		return false
	case cur.Order.OrderID != id:
		n := cur.Order.OrderID
		return refuse(n, fmt.Sprintf("order %d was renewed by order %d (%s): use orderId=%d", id, n, cur.Order.Status, n))
	}
	return true
}

// problem writes an RFC 8555 problem document (section 6.7).
func problem(w http.ResponseWriter, status int, typ, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{
		"type": "urn:ietf:params:acme:error:" + typ, "detail": detail, "status": status,
	})
}

// captureWriter notes the status its handler answered with.
type captureWriter struct {
	http.ResponseWriter
	status int
}

func (c *captureWriter) WriteHeader(code int) {
	if c.status == 0 {
		c.status = code
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *captureWriter) Write(b []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	return c.ResponseWriter.Write(b)
}
