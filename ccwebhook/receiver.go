package ccwebhook

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"time"

	"github.com/certorder/certorder/digicert"
	"github.com/certorder/certorder/internal/storekit"
)

// ReceiverConfig is what a Receiver needs.
type ReceiverConfig struct {
	Store Store
	// Secret is the webhook's secret, which CertCentral sends in
	// X-WEBHOOK-KEY: at least digicert.MinWebhookSecret characters.
	Secret string
	// Allow, if not empty, are the source addresses accepted (CertCentral
	// sends from 216.168.240.0/20); ClientIP tells a request's, by the
	// service's trusted-proxy rules.
	Allow    []netip.Prefix
	ClientIP func(r *http.Request) string
	Metrics  *Metrics
	Logger   *slog.Logger     // nil: none
	Now      func() time.Time // nil: time.Now
	// StoreTimeout bounds the store's work for one event; 0: 5s.
	StoreTimeout time.Duration
	// Queued, if set, is called once an order's event is queued: the
	// worker of this process takes it at once.
	Queued func()
}

// Receiver answers CertCentral's webhook.
type Receiver struct {
	cfg ReceiverConfig
	key [sha256.Size]byte // of the secret: compared in constant time whatever the length sent
}

// ErrShortSecret is NewReceiver's error for a secret CertCentral would refuse.
var ErrShortSecret = fmt.Errorf("the secret must be at least %d characters (CertCentral's rule)", digicert.MinWebhookSecret)

// NewReceiver returns a receiver.
func NewReceiver(cfg ReceiverConfig) (*Receiver, error) {
	if len(cfg.Secret) < digicert.MinWebhookSecret {
		return nil, ErrShortSecret
	}
	if cfg.Store == nil || cfg.ClientIP == nil {
		return nil, errors.New("ccwebhook: a store and ClientIP are required")
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics(nil)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.StoreTimeout <= 0 {
		cfg.StoreTimeout = 5 * time.Second
	}
	return &Receiver{cfg: cfg, key: sha256.Sum256([]byte(cfg.Secret))}, nil
}

// event is what CertCentral POSTs: {"event": NAME, "data": {...}}.
type event struct {
	Name string
	Data struct {
		OrderID       int64  `json:"order_id"`
		CertificateID int64  `json:"certificate_id"`
		Token         string `json:"token"`
		WebhookID     int64  `json:"webhook_id"`
	}
}

// maxToken bounds a challenge token kept (DigiCert's are short).
const maxToken = 512

// ServeHTTP answers one request. Nothing in it reaches CertCentral: the
// answer comes as soon as the event is recorded.
func (rc *Receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		rc.answer(w, r, http.StatusMethodNotAllowed, "none", Invalid)
		return
	}
	if !rc.allowed(r) {
		rc.answer(w, r, http.StatusForbidden, "none", Refused)
		return
	}
	sent := sha256.Sum256([]byte(r.Header.Get("X-WEBHOOK-KEY")))
	if subtle.ConstantTimeCompare(sent[:], rc.key[:]) != 1 {
		rc.answer(w, r, http.StatusUnauthorized, "none", Refused)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		rc.answer(w, r, http.StatusRequestEntityTooLarge, "none", Invalid)
		return
	case err != nil:
		rc.answer(w, r, http.StatusBadRequest, "none", Invalid)
		return
	}
	ev, ok := parse(body)
	if !ok {
		rc.answer(w, r, http.StatusBadRequest, "none", Invalid)
		return
	}
	now := rc.cfg.Now()
	rec := storekit.CertCentralEvent{Event: ev.Name, At: now}
	outcome := Ignored
	switch ev.Name {
	case digicert.EventCertificateIssued, digicert.EventCertificateRevoked, digicert.EventOrderRejected:
		if ev.Data.OrderID <= 0 {
			rc.answer(w, r, http.StatusBadRequest, ev.Name, Invalid)
			return
		}
		rec.OrderID, outcome = ev.Data.OrderID, Applied
	case digicert.EventChallenge:
		if ev.Data.Token == "" || len(ev.Data.Token) > maxToken {
			rc.answer(w, r, http.StatusBadRequest, ev.Name, Invalid)
			return
		}
		rec.Token, rec.WebhookID, outcome = ev.Data.Token, ev.Data.WebhookID, Applied
	}
	if err := rc.record(r.Context(), ev, rec); err != nil {
		rc.cfg.Logger.Error("certcentral webhook: the event could not be recorded; CertCentral was answered 503", "event", eventLabel(ev.Name), "err", err)
		rc.answer(w, r, http.StatusServiceUnavailable, ev.Name, Failed)
		return
	}
	if rec.OrderID != 0 && rc.cfg.Queued != nil {
		rc.cfg.Queued()
	}
	rc.answer(w, r, http.StatusOK, ev.Name, outcome)
}

// parse reads an event: a JSON object with a string event; data, when
// there, an object. Numbers that do not fit are not an event.
func parse(body []byte) (event, bool) {
	var top struct {
		Event *string         `json:"event"`
		Data  json.RawMessage `json:"data"`
	}
	var ev event
	if json.Unmarshal(body, &top) != nil || top.Event == nil { // null or not an object: no event either
		return ev, false
	}
	ev.Name = *top.Event
	if len(top.Data) > 0 && string(top.Data) != "null" && json.Unmarshal(top.Data, &ev.Data) != nil {
		return ev, false
	}
	return ev, true
}

// record queues an order's event (before the answer: durable) and keeps
// the event as the last one received.
func (rc *Receiver) record(ctx context.Context, ev event, rec storekit.CertCentralEvent) error {
	ctx, cancel := context.WithTimeout(ctx, rc.cfg.StoreTimeout)
	defer cancel()
	if rec.OrderID == 0 {
		return rc.cfg.Store.RecordCertCentralEvent(ctx, rec)
	}
	j, err := job(Payload{Event: ev.Name, OrderID: rec.OrderID, CertificateID: ev.Data.CertificateID, ReceivedAt: rec.At})
	if err != nil {
		return err
	}
	return rc.cfg.Store.RecordCertCentralEvent(ctx, rec, j)
}

// allowed applies the allow-list to the request's client address.
func (rc *Receiver) allowed(r *http.Request) bool {
	if len(rc.cfg.Allow) == 0 {
		return true
	}
	a, err := netip.ParseAddr(rc.cfg.ClientIP(r))
	if err != nil {
		return false
	}
	a = a.Unmap()
	for _, p := range rc.cfg.Allow {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// answer writes the status with no body (nothing to help a forger),
// counts the outcome and logs what is not an event applied or ignored.
func (rc *Receiver) answer(w http.ResponseWriter, r *http.Request, status int, name, outcome string) {
	label := name
	if label != "none" {
		label = eventLabel(name)
	}
	rc.cfg.Metrics.events.WithLabelValues(label, outcome).Inc()
	switch outcome {
	case Refused, Invalid:
		rc.cfg.Logger.Warn("certcentral webhook: request refused", "status", status, "outcome", outcome,
			"client", rc.cfg.ClientIP(r))
	default:
		rc.cfg.Logger.Info("certcentral webhook: event received", "event", label, "outcome", outcome)
	}
	w.WriteHeader(status)
}
