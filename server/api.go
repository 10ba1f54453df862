package server

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"sync"
	"time"
	"unsafe"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/wire"
)

// event is what the access log and the audit trail say of one request. It
// never holds the key or the body.
type event struct {
	start   time.Time
	id      []string // request ID (requestID), sent back as X-Request-Id
	ip      string
	limit   string // what the per-address limits count by: ip, or for IPv6 its /64 (limitKey)
	action  string // as sent, cut to certorder.AuditMaxAction bytes
	name    string // AccessName as sent, cut to certorder.AuditMaxMember bytes
	member  string // the authenticated member
	keyID   string // the key that authenticated the request
	orderID int64
	api     bool // a request to the endpoint, which the audit trail keeps
}

// newEvent is the event of a request that arrived at start. It is a
// value, kept on the handler's stack: a pointer made here was an
// allocation a request.
func (s *Server) newEvent(r *http.Request, start time.Time) event {
	ip := clientIP(r, s.cfg.Limits.TrustedProxies)
	return event{start: start, id: requestID(), ip: ip, limit: limitKey(ip)}
}

// clock is the time by the configured clock, given t, a reading of the
// real clock just taken: t itself when the configured clock is the real
// one. (A request read the clock six times, where two readings serve; a
// reading takes 70 ns on the project's machine.)
func (s *Server) clock(t time.Time) time.Time {
	if s.realClock {
		return t
	}
	return s.cfg.Now()
}

// requestID is 64 random bits in 16 hex digits, without fmt (a request's
// bookkeeping is on the hot path), as the value of X-Request-Id: the
// digits and the header's one-string slice are one allocation, not two.
func requestID() []string {
	const digits = "0123456789abcdef"
	p := new(struct {
		v [1]string
		b [16]byte
	})
	v := rand.Uint64()
	for i := len(p.b) - 1; i >= 0; i-- {
		p.b[i] = digits[v&0xf]
		v >>= 4
	}
	p.v[0] = unsafe.String(&p.b[0], len(p.b)) // p.b is not written again
	return p.v[:]
}

// handleAPI answers the endpoint. Checks run in the order docs/API.md
// gives: method, the per-IP limits, body, the in-flight cap, lockout,
// credentials, action, orderId, order. Nothing that costs more than a map
// look-up happens before the per-IP limits, and a request takes one of the
// MaxInFlight places only once its whole body has arrived, so clients that
// send slowly cannot fill them. The credentials and the order are read
// together, in one store read.
func (s *Server) handleAPI(w http.ResponseWriter, r *http.Request, start time.Time) {
	ev := s.newEvent(r, start)
	ev.api = true
	if f := s.serveAPI(w, r, &ev); f != nil {
		s.answer(w, r, &ev, nil, f)
	}
}

// serveAPI answers a request, or returns the failure to answer: it admits
// the request (the per-IP limits, the body, an in-flight place) and hands
// its body to call.
func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request, ev *event) *wire.Failure {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		return wire.Fail(wire.MethodNotAllowed)
	}
	now := s.clock(ev.start)
	if ok, wait := s.ipRate.take(ev.limit, now); !ok {
		return s.refuse("ip", wait)
	}
	if !s.perIP.take(ev.limit) {
		return s.refuse("ip_open", time.Second)
	}
	defer s.perIP.release(ev.limit)
	body, f := s.readBody(w, r, ev.start)
	if f != nil {
		return f
	}
	if f := s.takeSlot(); f != nil {
		putBody(body)
		return f
	}
	defer s.releaseSlot()
	return s.call(w, r, ev, body, now)
}

// call answers the request of an admitted body, which it gives back, or
// returns the failure to answer. (Split from serveAPI, each function's
// defers are few enough for the compiler to open-code them: serveAPI's
// three among its twelve returns cost 400 instructions a request, in
// runtime defer records.)
func (s *Server) call(w http.ResponseWriter, r *http.Request, ev *event, body *[]byte, now time.Time) *wire.Failure {
	req, f := wire.DecodeRequest(*body)
	if f != nil {
		putBody(body)
		return f
	}
	ev.action, ev.name = certorder.Cut(req.Action, certorder.AuditMaxAction), certorder.Cut(req.AccessName, certorder.AuditMaxMember)
	if f := s.lockedOut(ev.limit, req.AccessName, now); f != nil {
		return f
	}
	act, known := wire.Actions[req.Action]
	known = known && req.ActionOK
	c := getCall(now)
	defer putCall(c)
	if known && act.NeedsOrder {
		c.OrderID, _ = wire.ParseOrderID(req.OrderID)
	}
	if known && act.NeedsCertificate {
		c.CertKey = wire.ParseCertificateKey(req.SerialNumber, req.Thumbprint)
	}
	req.OrderID, req.SerialNumber, req.Thumbprint = nil, nil, nil
	putBody(body) // everything the request said is now copied out of it
	if !req.CredsOK {
		return wire.Fail(wire.CredentialsMissing)
	}
	c.Credential, c.Order, f = s.authenticate(r.Context(), req.AccessName, req.AccessKey, c.OrderID)
	if f != nil {
		if f.Code == wire.CredentialsFailed {
			s.authFailed(ev.limit, req.AccessName, now)
		}
		return f
	}
	ev.member, ev.keyID, ev.orderID = c.Credential.Member, c.Credential.KeyID, c.OrderID
	if ok, wait := s.memberRate.take(c.Credential.Member, now); !ok {
		return s.refuse("member", wait)
	}
	if !known {
		return wire.Fail(wire.UnknownAction)
	}
	if act.NeedsCertificate && c.CertKey.Key != "" {
		if c.Certificate, f = s.findCertificate(r.Context(), c.Credential.MemberID, c.CertKey); f != nil {
			return f
		}
		if c.Certificate != nil {
			ev.orderID = c.Certificate.OrderID // for the access log and the audit trail
		}
	}
	answer, f := act.Answer(r.Context(), c)
	if f != nil {
		return f
	}
	s.answer(w, r, ev, answer, nil)
	return nil
}

// callPool holds the Calls of requests, each with the buffer its answer is
// built in: a Call escapes (an action is called through a func value), so
// it was an allocation a request. An answer is written before its Call
// goes back.
var callPool = sync.Pool{New: func() any { return &wire.Call{Buf: make([]byte, 0, 4096)} }}

func getCall(now time.Time) *wire.Call {
	c := callPool.Get().(*wire.Call)
	c.Now = now
	return c
}

// putCall gives a Call back, holding nothing of its request.
func putCall(c *wire.Call) {
	*c = wire.Call{Buf: c.Buf[:0]}
	callPool.Put(c)
}

// readBody reads a request body of at most MaxBodyBytes within
// BodyTimeout of start (when its headers had come), into a pooled buffer
// (give it back with putBody). A declared length over the limit is refused
// at once. A declared length within it bounds what net/http lets be read
// already, so only a body of unknown length (chunked) goes through
// http.MaxBytesReader, which also closes the connection after refusing it
// (an allocation a request else).
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, start time.Time) (*[]byte, *wire.Failure) {
	if r.ContentLength > s.cfg.MaxBodyBytes {
		return nil, bodyTooLarge()
	}
	if d := s.cfg.Limits.BodyTimeout; d > 0 {
		// Not every ResponseWriter can (a test recorder): then the server's
		// read timeout is the bound.
		_ = http.NewResponseController(w).SetReadDeadline(start.Add(d))
	}
	src := r.Body
	if r.ContentLength < 0 {
		src = http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)
	}
	body := bodyPool.Get().(*[]byte)
	var err error
	*body, err = readAll(src, (*body)[:0], s.cfg.MaxBodyBytes)
	if err == nil {
		return body, nil
	}
	putBody(body)
	var maxErr *http.MaxBytesError // declared here: it escapes (errors.As), an allocation
	switch {
	case errors.As(err, &maxErr):
		return nil, bodyTooLarge()
	case errors.Is(err, os.ErrDeadlineExceeded):
		s.metrics.limited.WithLabelValues("body_timeout").Inc()
		return nil, &wire.Failure{Code: wire.MalformedRequest, Status: http.StatusRequestTimeout}
	}
	return nil, wire.Fail(wire.MalformedRequest)
}

func bodyTooLarge() *wire.Failure {
	return &wire.Failure{Code: wire.MalformedRequest, Status: http.StatusRequestEntityTooLarge}
}

// bodyPool holds request body buffers: a body is read into one, decoded,
// and given back.
var bodyPool = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// putBody gives a buffer of readBody back (the pointer it came in: putting
// a new one would allocate it).
func putBody(b *[]byte) {
	if b != nil {
		bodyPool.Put(b)
	}
}

// readAll is io.ReadAll into b, refusing more than max bytes as
// http.MaxBytesReader does.
func readAll(r io.Reader, b []byte, max int64) ([]byte, error) {
	for {
		if int64(len(b)) > max {
			return b, &http.MaxBytesError{Limit: max}
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			if int64(len(b)) > max {
				return b, &http.MaxBytesError{Limit: max}
			}
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

// authenticate checks an AccessName and AccessKey, given (the request's
// own check says whether they were), with one read of the credential and
// the member's order orderID (if not 0), through the cache in front of the
// store (Config.Credentials), which sets the store's timeout only when it
// reads the store. Whatever is wrong (unknown member, wrong or revoked key,
// disabled member) the answer is the same, after the same hashing.
func (s *Server) authenticate(ctx context.Context, name, key string, orderID int64) (certorder.Credential, *certorder.Order, *wire.Failure) {
	id, ok := certorder.KeyID(key)
	if !ok {
		certorder.HashKey(key) // the same work as a real check
		return certorder.Credential{}, nil, wire.Fail(wire.CredentialsFailed)
	}
	cred, order, err := s.creds.FindCredential(ctx, id, orderID)
	if errors.Is(err, certorder.ErrNotFound) {
		cred = certorder.Credential{} // Verify below fails, after the same work
	} else if err != nil {
		return cred, nil, s.storeFailure(err)
	}
	if !cred.Verify(name, key) {
		return certorder.Credential{}, nil, wire.Fail(wire.CredentialsFailed)
	}
	return cred, order, nil
}

// findCertificate reads the member's certificate key names, nil if the
// member has none, through Config.Certificates (the cache, which sets the
// store's timeout only when it reads the store). Another member's
// certificate is not read (the query asks for the member's own, through
// the index by key and member): its answer and work are those of an
// unknown certificate. Should one member's orders hold the serial twice (a
// CA's serial is unique, an import might not be), the newest order's is
// taken.
func (s *Server) findCertificate(ctx context.Context, memberID int64, key wire.CertificateKey) (*certorder.CertificateMatch, *wire.Failure) {
	q := certorder.CertificateQuery{MemberID: memberID}
	if key.Thumbprint {
		q.Thumbprints = []string{key.Key}
	} else {
		q.Serials = []string{key.Key}
	}
	ms, err := s.certs.FindCertificates(ctx, q)
	if err != nil {
		return nil, s.storeFailure(err)
	}
	if len(ms) == 0 {
		return nil, nil
	}
	return &ms[len(ms)-1], nil
}

// storeFailure logs a store error and turns it into an answer: 503 when the
// store cannot be reached (worth a retry), 500 otherwise.
func (s *Server) storeFailure(err error) *wire.Failure {
	s.metrics.storeErrors.Inc()
	s.cfg.Logger.Error("store error", "err", err)
	if errors.Is(err, certorder.ErrUnavailable) {
		return wire.Fail(wire.Unavailable)
	}
	return wire.Fail(wire.Internal)
}

// answer writes the body or the failure, and accounts for the request: the
// metrics, the access log line and the audit entry.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, ev *event, body []byte, f *wire.Failure) {
	status, code := http.StatusOK, wire.Code(0)
	if f != nil {
		code, status, body = f.Code, f.Status, wire.AppendFailure(nil, f.Code)
		if f.RetryAfter > 0 {
			w.Header().Set("Retry-After", retryAfter(f.RetryAfter))
		}
	}
	w.Header()["X-Request-Id"] = ev.id
	if s.cfg.ErrorsAs200 {
		writeJSON(w, http.StatusOK, body)
	} else {
		writeJSON(w, status, body)
	}
	end := time.Now()
	latency := end.Sub(ev.start)

	s.metrics.observe(ev.action, code, latency)
	if s.audit != nil && ev.api {
		name := ev.member
		if name == "" {
			name = ev.name
		}
		switch {
		case ev.member == "" && code != wire.CredentialsMissing && code != wire.CredentialsFailed:
			// Refused before authentication: counted, not one entry each.
			s.audit.refuse(certorder.AuditEntry{Time: s.clock(end), Outcome: int(code), ClientIP: ev.ip})
		case code == wire.CredentialsMissing || code == wire.CredentialsFailed:
			// Credentials refused: counted per member named and interval.
			s.audit.refuseCredentials(certorder.AuditEntry{Time: s.clock(end), Member: name, KeyID: ev.keyID, Action: ev.action,
				OrderID: ev.orderID, Outcome: int(code), ClientIP: ev.ip})
		default:
			s.audit.record(certorder.AuditEntry{Time: s.clock(end), Member: name, KeyID: ev.keyID, Action: ev.action,
				OrderID: ev.orderID, Outcome: int(code), ClientIP: ev.ip})
		}
	}
	if s.cfg.NoAccessLog {
		return
	}
	s.cfg.Logger.LogAttrs(r.Context(), slog.LevelInfo, "request",
		slog.String("request_id", ev.id[0]),
		slog.String("ip", ev.ip),
		slog.String("method", r.Method),
		slog.String("path", certorder.Cut(r.URL.Path, 128)),
		slog.String("action", certorder.RedactKeys(ev.action)),
		slog.String("member", ev.member),
		slog.Int64("order_id", ev.orderID),
		slog.Int("error", int(code)),
		slog.Int("status", status),
		slog.Duration("latency", latency),
	)
}

// writeJSON writes a JSON answer with the headers every answer carries.
func writeJSON(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	// Assigned, not Set: the keys are canonical already, and the values
	// are shared (net/http only reads them).
	h["Content-Type"] = contentTypeJSON
	h["Cache-Control"] = noStore
	h["X-Content-Type-Options"] = noSniff
	w.WriteHeader(status)
	w.Write(body)
}

var (
	contentTypeJSON = []string{"application/json"}
	noStore         = []string{"no-store"}
	noSniff         = []string{"nosniff"}
)
