package mailer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	gomail "github.com/wneessen/go-mail"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/notice"
	"github.com/certorder/certorder/webhook"
)

// Outbox is what the worker needs of the store: the notice outbox, and
// the events' orders to say them.
type Outbox interface {
	certorder.NoticeOutbox
	notice.OrderFinder
}

// WorkerConfig is what a Worker needs.
type WorkerConfig struct {
	Store   Outbox
	SMTP    Config
	Texts   notice.Texts
	Now     func() time.Time // nil: time.Now
	Logger  *slog.Logger     // nil: none
	Metrics prometheus.Registerer
	Poll    time.Duration // how often to look for work; 0: 1s
	// MaxAge: an event older than this when first seen is mailed to no one
	// (news no more, as after the SMTP settings were off for a while); 0:
	// DefaultMaxAge.
	MaxAge time.Duration
}

// DefaultMaxAge is about the webhooks' retry span.
const DefaultMaxAge = 72 * time.Hour

const (
	batch      = 100            // events taken at a time
	pruneEvery = 24 * time.Hour // how often finished notices are deleted
	keep       = 30 * 24 * time.Hour
)

// Worker queues the order events for the members' addresses and sends the
// notices due, one at a time over one connection. Several workers on one
// PostgreSQL store share the work: the store hands each event and each
// notice to one of them, and a notice is claimed for longer than its
// attempt may take, so that no other worker sends it meanwhile. A
// temporary failure (4xx, no connection) is tried again on the webhooks'
// schedule (webhook.Backoff, webhook.MaxAttempts attempts over about three
// days); a permanent one (5xx to the recipient or the message) is recorded
// on the address, where the member sees it.
type Worker struct {
	cfg     WorkerConfig
	lease   time.Duration
	metrics *metrics
	pruned  time.Time
	down    bool // the last attempt failed at the relay: the next success says it works again
}

type metrics struct {
	queued prometheus.Counter
	sent   *prometheus.CounterVec // by kind
	failed *prometheus.CounterVec // by failure: temporary, permanent
}

// NewWorker returns a worker; Run starts it.
func NewWorker(cfg WorkerConfig) *Worker {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Poll <= 0 {
		cfg.Poll = time.Second
	}
	if cfg.MaxAge <= 0 {
		cfg.MaxAge = DefaultMaxAge
	}
	if cfg.SMTP.Timeout <= 0 {
		cfg.SMTP.Timeout = DefaultTimeout
	}
	m := &metrics{
		queued: prometheus.NewCounter(prometheus.CounterOpts{Name: "certorder_notices_queued_total",
			Help: "Order events queued for a member's e-mail address (each a message, or part of a day's digest)."}),
		sent: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "certorder_notices_sent_total",
			Help: "E-mails the SMTP server accepted, by kind (event, digest, confirm)."}, []string{"kind"}),
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "certorder_notices_failed_total",
			Help: "E-mail attempts that failed: temporary (tried again later) or permanent (a 5xx, or the last attempt)."}, []string{"failure"}),
	}
	for _, k := range []string{certorder.NoticeEvent, certorder.NoticeDigest, certorder.NoticeConfirm} {
		m.sent.WithLabelValues(k)
	}
	m.failed.WithLabelValues("temporary")
	m.failed.WithLabelValues("permanent")
	if cfg.Metrics != nil {
		cfg.Metrics.MustRegister(m.queued, m.sent, m.failed)
	}
	// An attempt is a few exchanges (connect, TLS, AUTH, MAIL, RCPT, DATA,
	// the message), each bounded by the timeout; the claim outlasts them.
	return &Worker{cfg: cfg, metrics: m, lease: 8*cfg.SMTP.Timeout + 10*time.Second}
}

// Run works until ctx ends. A notice being sent then is abandoned: its
// lease runs out and it is sent again.
func (w *Worker) Run(ctx context.Context) {
	t := time.NewTicker(w.cfg.Poll)
	defer t.Stop()
	for {
		if err := w.Tick(ctx); err != nil && ctx.Err() == nil {
			w.cfg.Logger.Error("notices", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Tick does one round: queue the new events, send every notice due, prune
// (daily).
func (w *Worker) Tick(ctx context.Context) error {
	var errs []error
	for ctx.Err() == nil {
		taken, queued, err := w.cfg.Store.QueueNotices(ctx, batch, w.cfg.Now(), w.cfg.MaxAge)
		w.metrics.queued.Add(float64(queued))
		if err != nil {
			errs = append(errs, err)
		}
		if err != nil || taken < batch {
			break
		}
	}
	if err := w.sendDue(ctx); err != nil {
		errs = append(errs, err)
	}
	if now := w.cfg.Now(); now.Sub(w.pruned) >= pruneEvery {
		if err := w.cfg.Store.PruneNotices(ctx, now.Add(-keep)); err != nil {
			errs = append(errs, err)
		} else {
			w.pruned = now
		}
	}
	return errors.Join(errs...)
}

// sendDue claims the notices due one by one and sends each over one
// connection, kept open for the round.
func (w *Worker) sendDue(ctx context.Context) error {
	c := &conn{cfg: w.cfg.SMTP}
	defer c.close()
	for ctx.Err() == nil {
		now := w.cfg.Now()
		ns, err := w.cfg.Store.ClaimNotices(ctx, now, w.lease, 1)
		if err != nil || len(ns) == 0 {
			return err
		}
		actx, cancel := context.WithTimeout(ctx, w.lease-5*time.Second)
		err = w.send(actx, ctx, c, ns[0])
		cancel()
		if err != nil {
			return err
		}
	}
	return nil
}

// send makes one attempt at a notice (bounded by actx) and records what
// came of it (bounded by ctx).
func (w *Worker) send(actx, ctx context.Context, c *conn, n certorder.Notice) error {
	now := w.cfg.Now()
	a := certorder.NoticeAttempt{NoticeID: n.ID, AddressID: n.Address.ID, At: now}
	switch {
	case n.Address.MemberDisabled:
		// Nothing is sent for a disabled member: its events are news no
		// more when it is enabled again (docs/OPERATIONS.md).
		a.State, a.Error = certorder.DeliveryFailed, "the member is disabled"
		return w.cfg.Store.FinishNotice(ctx, a)
	case n.Kind != certorder.NoticeConfirm && !n.Address.Active():
		// Unsubscribed since it was queued: nothing is sent.
		a.State, a.Error = certorder.DeliveryFailed, "the address unsubscribed"
		return w.cfg.Store.FinishNotice(ctx, a)
	}
	msg, err := w.compose(actx, n, now)
	if err != nil {
		return err // the lease runs out and it is tried again
	}
	err = c.send(actx, msg, n.Address.Address)
	if ctx.Err() != nil {
		return nil // shutting down: the lease runs out and it is sent again
	}
	var f *Failure
	if err != nil {
		// The member sees f.Kind(); the operator the step, the relay's
		// words (never an AUTH reply's) and what to change.
		f = w.cfg.SMTP.failure(err)
		a.Error, a.FailureKind = f.Error(), f.Kind()
	}
	log := []any{"notice", n.ID, "address_id", n.Address.ID, "member", n.Address.Member}
	if f != nil {
		log = append(log, "step", f.Step, "err", f.Detail, "fix", f.Fix())
	}
	if err == nil && w.down {
		w.cfg.Logger.Info("the SMTP relay works again", "smtp", w.cfg.SMTP.Addr)
	}
	w.down = f != nil && f.Kind() == KindService
	switch {
	case err == nil:
		a.State = certorder.DeliveryDelivered
		w.metrics.sent.WithLabelValues(n.Kind).Inc()
	case f.Permanent:
		a.State, a.Permanent = certorder.DeliveryFailed, true
		w.metrics.failed.WithLabelValues("permanent").Inc()
		w.cfg.Logger.Warn("notice refused", log...)
	case n.Attempts+1 >= webhook.MaxAttempts:
		a.State, a.Error, a.Permanent = certorder.DeliveryFailed, fmt.Sprintf("gave up after %d attempts: %s", n.Attempts+1, a.Error), true
		w.metrics.failed.WithLabelValues("permanent").Inc()
		w.cfg.Logger.Warn("notice given up", log...)
	default:
		a.State, a.NextAttempt = certorder.DeliveryPending, now.Add(webhook.Backoff(n.Attempts+1, nil))
		w.metrics.failed.WithLabelValues("temporary").Inc()
		w.cfg.Logger.Warn("notice not sent; trying again later", append(log, "next_attempt", a.NextAttempt.UTC().Format(time.RFC3339))...)
	}
	return w.cfg.Store.FinishNotice(context.WithoutCancel(ctx), a)
}

// compose makes a notice's e-mail, its events said with their orders as
// they are now.
func (w *Worker) compose(ctx context.Context, n certorder.Notice, now time.Time) (*gomail.Msg, error) {
	told := make([]notice.Told, 0, min(len(n.Events), notice.MaxDigestItems))
	for _, ev := range n.Events[:min(len(n.Events), notice.MaxDigestItems)] { // a digest lists no more
		t := notice.Told{Event: ev, Now: now}
		o, err := w.cfg.Store.FindOrder(ctx, notice.OrderID(ev))
		if err != nil && !errors.Is(err, certorder.ErrNotFound) {
			return nil, err
		}
		if o != nil && o.MemberID == n.Address.MemberID {
			t.Order = o
		}
		told = append(told, t)
	}
	m, err := w.cfg.Texts.Compose(n, told, len(n.Events))
	if err != nil {
		return nil, err
	}
	return w.cfg.SMTP.message(m, now)
}
