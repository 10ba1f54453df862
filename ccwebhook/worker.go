package ccwebhook

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/certorder/certorder/ccsync"
	"github.com/certorder/certorder/internal/printable"
	"github.com/certorder/certorder/queue"
)

// Applier applies the orders events named: ccsync.Syncer.
type Applier interface {
	Apply(ctx context.Context, ids []int64) (ccsync.Report, error)
}

// WorkerConfig is what a Worker needs.
type WorkerConfig struct {
	Store   Store
	Sync    Applier
	Owner   string // the instance, as its claims name it; "": the host and process
	Metrics *Metrics
	Logger  *slog.Logger     // nil: none
	Now     func() time.Time // nil: time.Now
	Poll    time.Duration    // how often to look for events another instance received; 0: 1s
	// Lease is how long a claim holds its events: longer than an apply
	// (the Order info fetches, a renewal's list); 0: 10 minutes.
	Lease time.Duration
}

// Worker applies the CertCentral events queued: it claims what is due,
// applies the orders they name in one ccsync.Syncer.Apply, and finishes
// them; while another sync holds the lock it puts them back for a second
// (busyWait), and after a failure (CertCentral down) it tries again on the
// queue's schedule. Several workers on one PostgreSQL store share the
// events: each is claimed by one.
type Worker struct {
	cfg    WorkerConfig
	wake   chan struct{}
	pruned time.Time
}

const (
	claimLimit = 50             // events applied together, at most
	busyWait   = time.Second    // another sync holds the lock: again after this (jittered)
	pruneEvery = 24 * time.Hour // how often finished events are deleted
	keep       = 30 * 24 * time.Hour
)

// NewWorker returns a worker; Run starts it.
func NewWorker(cfg WorkerConfig) *Worker {
	if cfg.Owner == "" {
		cfg.Owner = queue.Owner("certcentral")
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
	if cfg.Poll <= 0 {
		cfg.Poll = time.Second
	}
	if cfg.Lease <= 0 {
		cfg.Lease = 10 * time.Minute
	}
	return &Worker{cfg: cfg, wake: make(chan struct{}, 1)}
}

// Wake has the worker look for events at once (the receiver of this
// process queued one).
func (w *Worker) Wake() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Run works until ctx ends. Events being applied then are left to their
// lease: another claim takes them again.
func (w *Worker) Run(ctx context.Context) {
	t := time.NewTicker(w.cfg.Poll)
	defer t.Stop()
	for {
		if err := w.Tick(ctx); err != nil && ctx.Err() == nil {
			w.cfg.Logger.Error("certcentral events", "err", err)
		}
		w.cfg.Metrics.rounds.Inc()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-w.wake:
		}
	}
}

// Tick applies every event due, then prunes (daily).
func (w *Worker) Tick(ctx context.Context) error {
	for ctx.Err() == nil {
		jobs, err := w.cfg.Store.ClaimJobs(ctx, queue.Claim{Kinds: []string{queue.KindCertCentralEvent}, Owner: w.cfg.Owner,
			At: w.cfg.Now(), Lease: w.cfg.Lease, Limit: claimLimit})
		if err != nil || len(jobs) == 0 {
			if err == nil {
				err = w.prune(ctx)
			}
			return err
		}
		if err := w.apply(ctx, jobs); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// result is a job's record of its attempts: the failures so far (a wait
// for the lock is none) and what the last apply did.
type result struct {
	Failures int `json:"failures,omitempty"`
	Fetched  int `json:"fetched"`
	Changed  int `json:"changed"`
}

// apply applies the claimed events' orders at once and finishes them.
func (w *Worker) apply(ctx context.Context, jobs []queue.Job) error {
	now := w.cfg.Now()
	var ids []int64
	var held []queue.Job
	var errs []error
	for _, j := range jobs {
		p, err := payloadOf(j)
		if err != nil { // nothing can apply it
			errs = append(errs, w.finish(ctx, queue.Outcome{JobID: j.ID, At: now, State: queue.Failed, Error: err.Error()}))
			continue
		}
		ids, held = append(ids, p.OrderID), append(held, j)
	}
	if len(held) == 0 {
		return errors.Join(errs...)
	}
	rep, err := w.cfg.Sync.Apply(ctx, ids)
	now = w.cfg.Now()
	for _, j := range held {
		o := queue.Outcome{JobID: j.ID, At: now}
		var last result
		_ = json.Unmarshal(j.Result, &last) // none yet: zero
		switch {
		case errors.Is(err, ccsync.ErrBusy):
			// The poll, or another instance, is syncing: shortly again.
			o.State, o.RunAfter = queue.Pending, now.Add(busyWait+rand.N(busyWait))
		case err != nil && ctx.Err() != nil:
			return nil // shutting down: the lease runs out and another claim takes it
		case err != nil:
			last.Failures++
			o.Error = printable.Cut(err.Error(), 1024)
			if o.State = queue.Failed; last.Failures < queue.MaxAttempts {
				o.State, o.RunAfter = queue.Pending, now.Add(queue.Backoff(last.Failures, nil))
			}
			o.Result, _ = json.Marshal(last)
		default:
			o.State = queue.Done
			last.Fetched, last.Changed = rep.Fetched, rep.New+rep.Changed+rep.Renewals+rep.Reissues
			o.Result, _ = json.Marshal(last)
			w.cfg.Metrics.apply.Observe(now.Sub(j.CreatedAt).Seconds())
		}
		errs = append(errs, w.finish(ctx, o))
	}
	switch {
	case errors.Is(err, ccsync.ErrBusy):
	case err != nil:
		w.cfg.Logger.Warn("certcentral events: applying failed; tried again later (the poll reconciles meanwhile)",
			"orders", ids, "err", err)
	default:
		w.cfg.Logger.Info("certcentral events applied", "orders", ids, "summary", rep.Line(false))
	}
	return errors.Join(errs...)
}

func (w *Worker) finish(ctx context.Context, o queue.Outcome) error {
	o.Owner = w.cfg.Owner
	return w.cfg.Store.FinishJob(context.WithoutCancel(ctx), o)
}

func (w *Worker) prune(ctx context.Context) error {
	now := w.cfg.Now()
	if now.Sub(w.pruned) < pruneEvery {
		return nil
	}
	if err := w.cfg.Store.PruneJobs(ctx, []string{queue.KindCertCentralEvent}, now.Add(-keep)); err != nil {
		return err
	}
	w.pruned = now
	return nil
}

// announced are the statuses an event announces: certificate_issued,
// certificate_revoked, order_rejected. CertCentral sends none for the
// others (pending, reissue_pending, canceled, expired).
var announced = []string{"issued", "revoked", "rejected"}

// Witness is the poll's ccsync.PollWitness: a change of status the poll
// stored that an event announces, but for which no event of the order
// was received since the poll's window began, is counted as missed
// (certorder_certcentral_webhook_missed_total): the webhook is not
// working, or an event was lost.
type Witness struct {
	Store   queue.Store
	Metrics *Metrics
	Logger  *slog.Logger // nil: none
}

// PollFound counts the change if no event announced it.
func (w Witness) PollFound(ctx context.Context, orderID int64, status string, since time.Time) {
	if !slices.Contains(announced, status) {
		return
	}
	log := w.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	jobs, err := w.Store.Jobs(ctx, queue.List{Kind: queue.KindCertCentralEvent, SubjectID: orderID, Limit: 1})
	if err != nil {
		log.Warn("certcentral webhook: could not tell whether an event announced a change", "order", orderID, "err", err)
		return
	}
	if len(jobs) > 0 && !jobs[0].CreatedAt.Before(since) {
		return
	}
	w.Metrics.missed.Inc()
	log.Warn("certcentral webhook: the poll found a change no event announced", "order", orderID, "status", status)
}
