package mailer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	gomail "github.com/wneessen/go-mail"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/storekit"
	"github.com/certorder/certorder/notice"
	"github.com/certorder/certorder/queue"
)

// Store is what the worker needs of the store: the queue, the events to
// queue for the addresses, the addresses, and the events' orders to say
// them.
type Store interface {
	queue.Store
	// QueueNotices takes up to limit order events not yet queued for
	// notices and, in one transaction, queues the job plan makes of each
	// for every active address of the event's member that wants its type
	// (plan gets the address's ID and member, and how many events were
	// queued for it one by one on at's day, UTC; false: none). Instances
	// sharing the store never take the same event. It returns how many
	// events it took and how many jobs it queued.
	QueueNotices(ctx context.Context, limit int, at time.Time,
		plan func(ev certorder.Event, a certorder.NoticeAddress, today int) (queue.Job, bool)) (taken, queued int, err error)
	// FindNoticeAddress returns an address by its ID.
	FindNoticeAddress(ctx context.Context, id int64) (certorder.NoticeAddress, error)
	// NoticeEvents returns the first limit events a notice job tells,
	// oldest first, and how many it tells.
	NoticeEvents(ctx context.Context, jobID int64, limit int) ([]certorder.Event, int, error)
	// RecordNoticeAttempt records on an address how a message to it went:
	// sent, refused for good, or failed for now (with when it is tried
	// again).
	RecordNoticeAttempt(ctx context.Context, addressID int64, a storekit.NoticeAttempt) error
	notice.OrderFinder
}

// WorkerConfig is what a Worker needs.
type WorkerConfig struct {
	Store   Store
	Owner   string // the instance, as its claims name it; "": the host and process
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

// Worker queues the order events for the members' addresses (jobs of the
// notice kinds) and sends the notices due, one at a time over one
// connection, taking the members in turn (the queue's round-robin, those
// sent to lately last), so that one member's flood delays no one else's
// notices. Several workers on one PostgreSQL store share the work: the
// store hands each event and each notice to one of them, and a notice is
// claimed for longer than its attempt may take, so that no other worker
// sends it meanwhile. A temporary failure (4xx, no connection) is tried
// again on the queue's schedule (queue.Backoff, queue.MaxAttempts attempts
// over about three days); a permanent one (5xx to the recipient or the
// message) is recorded on the address, where the member sees it.
type Worker struct {
	cfg     WorkerConfig
	lease   time.Duration
	metrics *metrics
	pruned  time.Time
	served  map[int64]uint64 // members sent to lately: when, on sent's clock
	sent    uint64
	down    bool // the last attempt failed at the relay: the next success says it works again
}

// servedMemory is how many members the worker remembers sending to: a
// member not among them comes first again.
const servedMemory = 1000

type metrics struct {
	rounds prometheus.Counter
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
	if cfg.Owner == "" {
		cfg.Owner = queue.Owner("notices")
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
		rounds: queue.RoundsCounter("notices"),
		queued: prometheus.NewCounter(prometheus.CounterOpts{Name: "certorder_notices_queued_total",
			Help: "Order events queued for a member's e-mail address (each a message, or part of a day's digest)."}),
		sent: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "certorder_notices_sent_total",
			Help: "E-mails the SMTP server accepted, by kind (event, digest, confirm)."}, []string{"kind"}),
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "certorder_notices_failed_total",
			Help: "E-mail attempts that failed: temporary (tried again later) or permanent (a 5xx, or the last attempt)."}, []string{"failure"}),
	}
	for _, k := range []string{notice.KindEvent, notice.KindDigest, notice.KindConfirm} {
		m.sent.WithLabelValues(k)
	}
	m.failed.WithLabelValues("temporary")
	m.failed.WithLabelValues("permanent")
	if cfg.Metrics != nil {
		cfg.Metrics.MustRegister(m.rounds, m.queued, m.sent, m.failed)
	}
	// An attempt is a few exchanges (connect, TLS, AUTH, MAIL, RCPT, DATA,
	// the message), each bounded by the timeout; the claim outlasts them.
	return &Worker{cfg: cfg, metrics: m, lease: 8*cfg.SMTP.Timeout + 10*time.Second, served: map[int64]uint64{}}
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
		w.metrics.rounds.Inc()
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
		now := w.cfg.Now()
		taken, queued, err := w.cfg.Store.QueueNotices(ctx, batch, now, Plan(now, w.cfg.MaxAge))
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
		if err := w.cfg.Store.PruneJobs(ctx, queue.NoticeKinds, now.Add(-keep)); err != nil {
			errs = append(errs, err)
		} else {
			w.pruned = now
		}
	}
	return errors.Join(errs...)
}

// Plan is the rule by which an event is told to an address at now, as
// QueueNotices asks: a message of its own while the address had fewer
// than NoticeDailyEvents today, else the day's digest (one pending per
// address and day, due as the day ends). An event older than maxAge is
// news no more: no job.
func Plan(now time.Time, maxAge time.Duration) func(ev certorder.Event, a certorder.NoticeAddress, today int) (queue.Job, bool) {
	return func(ev certorder.Event, a certorder.NoticeAddress, today int) (queue.Job, bool) {
		if ev.At.Before(now.Add(-maxAge)) {
			return queue.Job{}, false
		}
		j := queue.Job{Kind: queue.KindNoticeEvent, MemberID: a.MemberID, SubjectID: a.ID}
		if today >= certorder.NoticeDailyEvents {
			y, m, d := now.UTC().Date()
			j.Kind, j.RunAfter = queue.KindNoticeDigest, time.Date(y, m, d+1, 0, 0, 0, 0, time.UTC)
			j.Key = fmt.Sprintf("%d/%s", a.ID, now.UTC().Format(certorder.DateLayout))
		}
		return j, true
	}
}

// sendDue claims the notices due one by one, the members in turn, and
// sends each over one connection, kept open for the round.
func (w *Worker) sendDue(ctx context.Context) error {
	c := &conn{cfg: w.cfg.SMTP}
	defer c.close()
	for ctx.Err() == nil {
		now := w.cfg.Now()
		jobs, err := w.cfg.Store.ClaimJobs(ctx, queue.Claim{Kinds: queue.NoticeKinds, Owner: w.cfg.Owner, At: now,
			Lease: w.lease, Limit: 1, RoundRobin: true, Served: w.servedOrder()})
		if err != nil || len(jobs) == 0 {
			return err
		}
		j := jobs[0]
		w.sent++
		w.served[j.MemberID] = w.sent
		actx, cancel := context.WithTimeout(ctx, w.lease-5*time.Second)
		err = w.send(actx, ctx, c, j)
		cancel()
		if err != nil {
			return err
		}
	}
	return nil
}

// servedOrder lists the members sent to lately, the longest ago first, so
// that a claim takes every other member before them; it forgets the
// oldest beyond servedMemory.
func (w *Worker) servedOrder() []int64 {
	order := slices.Collect(maps.Keys(w.served))
	slices.SortFunc(order, func(a, b int64) int { return cmp.Compare(w.served[a], w.served[b]) })
	for _, id := range order[:max(0, len(order)-servedMemory)] {
		delete(w.served, id)
	}
	return order[max(0, len(order)-servedMemory):]
}

// send makes one attempt at a notice job (bounded by actx) and records
// what came of it (bounded by ctx).
func (w *Worker) send(actx, ctx context.Context, c *conn, j queue.Job) error {
	now := w.cfg.Now()
	o := queue.Outcome{JobID: j.ID, Owner: w.cfg.Owner, At: now}
	n, err := w.notice(actx, j)
	switch {
	case errors.Is(err, certorder.ErrNotFound):
		o.State, o.Error = queue.Failed, "the address was deleted"
		return w.cfg.Store.FinishJob(ctx, o)
	case err != nil:
		return err // the lease runs out and it is tried again
	case n.Address.MemberDisabled:
		// Nothing is sent for a disabled member: its events are news no
		// more when it is enabled again (docs/OPERATIONS.md).
		o.State, o.Error = queue.Failed, "the member is disabled"
		return w.cfg.Store.FinishJob(ctx, o)
	case n.Kind != notice.KindConfirm && !n.Address.Active():
		// Unsubscribed since it was queued: nothing is sent.
		o.State, o.Error = queue.Failed, "the address unsubscribed"
		return w.cfg.Store.FinishJob(ctx, o)
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
	record := storekit.NoticeAttempt{At: now, Sent: err == nil}
	log := []any{"notice", j.ID, "address_id", n.Address.ID, "member", n.Address.Member}
	if err != nil {
		// The member sees f.Kind(); the operator the step, the relay's
		// words (never an AUTH reply's) and what to change.
		f = w.cfg.SMTP.failure(err)
		o.Error, record.Failure, record.FailureKind = f.Error(), f.Error(), f.Kind()
		log = append(log, "step", f.Step, "err", f.Detail, "fix", f.Fix())
	}
	if err == nil && w.down {
		w.cfg.Logger.Info("the SMTP relay works again", "smtp", w.cfg.SMTP.Addr)
	}
	w.down = f != nil && f.Kind() == KindService
	switch {
	case err == nil:
		o.State = queue.Done
		w.metrics.sent.WithLabelValues(n.Kind).Inc()
	case f.Permanent:
		o.State = queue.Failed
		w.metrics.failed.WithLabelValues("permanent").Inc()
		w.cfg.Logger.Warn("notice refused", log...)
	case j.Attempts+1 >= queue.MaxAttempts:
		o.State, o.Error = queue.Failed, fmt.Sprintf("gave up after %d attempts: %s", j.Attempts+1, o.Error)
		record.Failure = o.Error
		w.metrics.failed.WithLabelValues("permanent").Inc()
		w.cfg.Logger.Warn("notice given up", log...)
	default:
		o.State, o.RunAfter = queue.Pending, now.Add(queue.Backoff(j.Attempts+1, nil))
		record.RetryAt = o.RunAfter
		w.metrics.failed.WithLabelValues("temporary").Inc()
		w.cfg.Logger.Warn("notice not sent; trying again later", append(log, "next_attempt", o.RunAfter.UTC().Format(time.RFC3339))...)
	}
	ctx = context.WithoutCancel(ctx)
	if err := w.cfg.Store.FinishJob(ctx, o); err != nil {
		return err
	}
	return w.cfg.Store.RecordNoticeAttempt(ctx, n.Address.ID, record)
}

// notice reads a notice job: its address (ErrNotFound when deleted since)
// and its events.
func (w *Worker) notice(ctx context.Context, j queue.Job) (notice.Notice, error) {
	n := notice.Notice{ID: j.ID, Kind: strings.TrimPrefix(j.Kind, "notice."), CreatedAt: j.CreatedAt,
		Day: j.CreatedAt.UTC().Format(certorder.DateLayout)}
	var err error
	if n.Address, err = w.cfg.Store.FindNoticeAddress(ctx, j.SubjectID); err != nil {
		return n, err
	}
	if n.Address.MemberID != j.MemberID { // deleted, and its ID another's now
		return n, fmt.Errorf("%w: notice address %d", certorder.ErrNotFound, j.SubjectID)
	}
	if n.Kind != notice.KindConfirm { // a digest lists no more than MaxDigestItems
		n.Events, n.EventCount, err = w.cfg.Store.NoticeEvents(ctx, j.ID, notice.MaxDigestItems)
	}
	return n, err
}

// compose makes a notice's e-mail, its events said with their orders as
// they are now.
func (w *Worker) compose(ctx context.Context, n notice.Notice, now time.Time) (*gomail.Msg, error) {
	told := make([]notice.Told, 0, len(n.Events))
	for _, ev := range n.Events {
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
	m, err := w.cfg.Texts.Compose(n, told, n.EventCount)
	if err != nil {
		return nil, err
	}
	return w.cfg.SMTP.message(m, now)
}
