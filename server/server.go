// Package server is the HTTP side of certorder: the one POST endpoint of the
// interface, its three actions and its failures.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"time"

	"github.com/certorder/certorder"
)

// Config is what New needs besides the store.
type Config struct {
	CASegment    string           // path segment of the endpoint: /api/<CASegment>/
	ErrorsAs200  bool             // answer failures with status 200, for clients that expect it
	MaxBodyBytes int64            // request body limit; 0 means DefaultMaxBodyBytes
	StoreTimeout time.Duration    // bound on the store's work for one request; 0 means DefaultStoreTimeout
	Now          func() time.Time // clock for days_remaining; nil means time.Now
	Logger       *slog.Logger     // access and error log; nil means none
	NoAccessLog  bool             // log errors only, not one line per request
}

// DefaultMaxBodyBytes bounds a request body. A real request is well under 1 KiB.
const DefaultMaxBodyBytes = 16 << 10

// DefaultStoreTimeout bounds the store's work for one request, so that a
// database that stops answering gives a quick 503 rather than a hung client.
const DefaultStoreTimeout = 5 * time.Second

var segmentPattern = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

// ValidSegment checks a CA path segment.
func ValidSegment(seg string) error {
	if !segmentPattern.MatchString(seg) || seg == "." || seg == ".." {
		return fmt.Errorf("CA segment %q: use letters, digits and . _ -", seg)
	}
	return nil
}

type server struct {
	store   certorder.Store
	cfg     Config
	actions map[string]action
}

// action answers one authenticated request.
type action struct {
	needsOrder bool // the request names an order in orderId
	answer     func(c *call) ([]byte, *failure)
}

// call is an authenticated request.
type call struct {
	cred    certorder.Credential
	orderID int64            // 0 when orderId is absent or not a valid order number
	order   *certorder.Order // the order orderID names, of any member; nil if none
}

// failure is an answer's error number and HTTP status.
type failure struct {
	num    certorder.ErrorNumber
	status int
}

func fail(num certorder.ErrorNumber) *failure { return &failure{num: num, status: num.HTTPStatus()} }

// New returns the service's handler.
func New(store certorder.Store, cfg Config) (http.Handler, error) {
	if err := ValidSegment(cfg.CASegment); err != nil {
		return nil, err
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.StoreTimeout <= 0 {
		cfg.StoreTimeout = DefaultStoreTimeout
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &server{store: store, cfg: cfg}
	// The actions of the interface, section 4.
	s.actions = map[string]action{
		"Auth":       {answer: auth},
		"OrderInfo":  {needsOrder: true, answer: s.orderInfo},
		"RenewCheck": {needsOrder: true, answer: renewCheck},
	}
	mux := http.NewServeMux()
	api := http.HandlerFunc(s.handleAPI)
	mux.Handle("/api/"+cfg.CASegment+"/{$}", api)
	mux.Handle("/api/"+cfg.CASegment, api) // without the slash: no redirect that would turn a POST into a GET
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.answer(w, r, &event{start: time.Now()}, nil, fail(certorder.NumUnknownPath))
	})
	return mux, nil
}

// event is what the access log says of one request. It never holds the key or the body.
type event struct {
	start   time.Time
	action  string
	member  string
	orderID int64
}

// handleAPI answers the endpoint. Checks run in the order docs/API.md
// gives: method, body, credentials, action, orderId, order. The
// credentials and the order are read together, in one store read.
func (s *server) handleAPI(w http.ResponseWriter, r *http.Request) {
	ev := &event{start: time.Now()}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		s.answer(w, r, ev, nil, fail(certorder.NumMethodNotAllowed))
		return
	}
	req, f := decodeRequest(w, r, s.cfg.MaxBodyBytes)
	if f != nil {
		s.answer(w, r, ev, nil, f)
		return
	}
	ev.action = req.Action
	act, known := s.actions[req.Action]
	known = known && req.actionOK
	c := &call{}
	if known && act.needsOrder {
		c.orderID, _ = certorder.ParseOrderID(req.OrderID)
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.StoreTimeout)
	defer cancel()
	c.cred, c.order, f = s.authenticate(ctx, req, c.orderID)
	if f != nil {
		s.answer(w, r, ev, nil, f)
		return
	}
	ev.member, ev.orderID = c.cred.Member, c.orderID
	if !known {
		s.answer(w, r, ev, nil, fail(certorder.NumUnknownAction))
		return
	}
	body, f := act.answer(c)
	s.answer(w, r, ev, body, f)
}

// authenticate checks AccessName and AccessKey and reads the order orderID
// (if not 0) in the same store read. Whatever is wrong (unknown member,
// wrong or revoked key, disabled member) the answer is the same.
func (s *server) authenticate(ctx context.Context, req request, orderID int64) (certorder.Credential, *certorder.Order, *failure) {
	if !req.credsOK {
		return certorder.Credential{}, nil, fail(certorder.NumCredentialsMissing)
	}
	id, ok := certorder.KeyID(req.AccessKey)
	if !ok {
		certorder.HashKey(req.AccessKey) // the same work as a real check
		return certorder.Credential{}, nil, fail(certorder.NumCredentialsFailed)
	}
	cred, order, err := s.store.FindCredential(ctx, id, orderID)
	if errors.Is(err, certorder.ErrNotFound) {
		cred = certorder.Credential{} // Verify below fails, after the same work
	} else if err != nil {
		return cred, nil, s.storeFailure(err)
	}
	if !cred.Verify(req.AccessName, req.AccessKey) {
		return certorder.Credential{}, nil, fail(certorder.NumCredentialsFailed)
	}
	return cred, order, nil
}

func auth(*call) ([]byte, *failure) { return authenticatedBody, nil }

// ownOrder is the member's order the request names. Another member's order
// gets the same answer as one that does not exist.
func (c *call) ownOrder() (*certorder.Order, *failure) {
	switch {
	case c.orderID == 0:
		return nil, fail(certorder.NumBadOrderID)
	case c.order == nil || c.order.MemberID != c.cred.MemberID:
		return nil, fail(certorder.NumNoSuchOrder)
	}
	return c.order, nil
}

func (s *server) orderInfo(c *call) ([]byte, *failure) {
	o, f := c.ownOrder()
	if f != nil {
		return nil, f
	}
	b := make([]byte, 0, len(o.Doc)+128)
	return append(o.AppendJSON(b, s.cfg.Now()), '\n'), nil
}

func renewCheck(c *call) ([]byte, *failure) {
	o, f := c.ownOrder()
	if f != nil {
		return nil, f
	}
	if o.RenewedBy == 0 {
		return nil, fail(certorder.NumNotRenewed)
	}
	return renewCheckBody(o.ID, o.RenewedBy), nil
}

// storeFailure logs a store error and turns it into an answer: 503 when the
// store cannot be reached (worth a retry), 500 otherwise.
func (s *server) storeFailure(err error) *failure {
	s.cfg.Logger.Error("store error", "err", err)
	if errors.Is(err, certorder.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) {
		return fail(certorder.NumUnavailable)
	}
	return fail(certorder.NumInternal)
}

// answer writes the body or the failure, and the access log line.
func (s *server) answer(w http.ResponseWriter, r *http.Request, ev *event, body []byte, f *failure) {
	status, num := http.StatusOK, certorder.ErrorNumber(0)
	if f != nil {
		num, status, body = f.num, f.status, failureBody(f.num)
	}
	if s.cfg.ErrorsAs200 {
		writeJSON(w, http.StatusOK, body)
	} else {
		writeJSON(w, status, body)
	}
	if s.cfg.NoAccessLog {
		return
	}
	s.cfg.Logger.LogAttrs(r.Context(), slog.LevelInfo, "request",
		slog.String("method", r.Method),
		slog.String("path", r.URL.Path),
		slog.String("action", ev.action),
		slog.String("member", ev.member),
		slog.String("order_id", strconv.FormatInt(ev.orderID, 10)),
		slog.Int("error", int(num)),
		slog.Int("status", status),
		slog.Duration("latency", time.Since(ev.start)),
	)
}
