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
type action func(ctx context.Context, cred certorder.Credential, req request, ev *event) ([]byte, *failure)

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
		"Auth":       s.auth,
		"OrderInfo":  s.orderInfo,
		"RenewCheck": s.renewCheck,
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
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.StoreTimeout)
	defer cancel()
	cred, f := s.authenticate(ctx, req)
	if f != nil {
		s.answer(w, r, ev, nil, f)
		return
	}
	ev.member = cred.Member
	act, ok := s.actions[req.Action]
	if !req.actionOK || !ok {
		s.answer(w, r, ev, nil, fail(certorder.NumUnknownAction))
		return
	}
	body, f := act(ctx, cred, req, ev)
	s.answer(w, r, ev, body, f)
}

// authenticate checks AccessName and AccessKey. Whatever is wrong (unknown
// member, wrong or revoked key, disabled member) the answer is the same.
func (s *server) authenticate(ctx context.Context, req request) (certorder.Credential, *failure) {
	if !req.credsOK {
		return certorder.Credential{}, fail(certorder.NumCredentialsMissing)
	}
	id, ok := certorder.KeyID(req.AccessKey)
	if !ok {
		certorder.HashKey(req.AccessKey) // the same work as a real check
		return certorder.Credential{}, fail(certorder.NumCredentialsFailed)
	}
	cred, err := s.store.FindCredential(ctx, id)
	if errors.Is(err, certorder.ErrNotFound) {
		cred = certorder.Credential{} // Verify below fails, after the same work
	} else if err != nil {
		return cred, s.storeFailure(err)
	}
	if !cred.Verify(req.AccessName, req.AccessKey) {
		return certorder.Credential{}, fail(certorder.NumCredentialsFailed)
	}
	return cred, nil
}

func (s *server) auth(context.Context, certorder.Credential, request, *event) ([]byte, *failure) {
	return authenticatedBody, nil
}

// findOrder returns an order of the member. Another member's order gets
// the same answer as one that does not exist.
func (s *server) findOrder(ctx context.Context, cred certorder.Credential, req request, ev *event) (*certorder.Order, *failure) {
	id, ok := certorder.ParseOrderID(req.OrderID)
	if !ok {
		return nil, fail(certorder.NumBadOrderID)
	}
	ev.orderID = id
	o, err := s.store.FindOrder(ctx, id)
	if errors.Is(err, certorder.ErrNotFound) || err == nil && o.MemberID != cred.MemberID {
		return nil, fail(certorder.NumNoSuchOrder)
	}
	if err != nil {
		return nil, s.storeFailure(err)
	}
	return o, nil
}

func (s *server) orderInfo(ctx context.Context, cred certorder.Credential, req request, ev *event) ([]byte, *failure) {
	o, f := s.findOrder(ctx, cred, req, ev)
	if f != nil {
		return nil, f
	}
	b := make([]byte, 0, len(o.Doc)+128)
	return append(o.AppendJSON(b, s.cfg.Now()), '\n'), nil
}

func (s *server) renewCheck(ctx context.Context, cred certorder.Credential, req request, ev *event) ([]byte, *failure) {
	o, f := s.findOrder(ctx, cred, req, ev)
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
