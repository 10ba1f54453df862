// Package ccsync keeps certorder's orders in step with DigiCert
// CertCentral: it reads orders through package digicert and stores them
// through the store's SyncStore role, by the rules of ApplyUpstream (who
// owns an upstream order; the renewal checks of the root package).
//
// A run is full (the first, or when asked: List orders, every page) or
// incremental (the status changes since the last successful run, the orders
// created since, and the renewals the store does not know yet), then fetches
// Order info for what changed and stores it a batch at a time, each batch in
// one transaction. One run at a time holds the store's sync lock; the cursor
// moves only when a run succeeds, so a failed or killed run is done again.
// docs/SYNC.md has the details.
package ccsync

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/digicert"
	"github.com/certorder/certorder/internal/storekit"
)

// Store is what a sync needs of a store.
type Store interface {
	storekit.SyncStore
	storekit.SyncTxRunner
	Members(ctx context.Context) ([]certorder.Member, error)
	AppendAudit(ctx context.Context, entries []certorder.AuditEntry) error
}

// DefaultBatch is how many orders a run stores in one transaction.
const DefaultBatch = 100

// Overlap widens the window of new orders of an incremental run at both
// ends, against clock differences with DigiCert and orders that show in
// the list a little after their creation time. Orders listed again that
// have not changed are not fetched again, so it costs little.
const Overlap = 15 * time.Minute

// ErrBusy is Run's error when another sync holds the store's sync lock.
var ErrBusy = errors.New("another sync is running (it holds the sync lock); nothing done")

// ErrIncomplete is Run's error when the run stopped at Config.MaxFetches:
// what it fetched is stored, the cursor is kept, and the next run
// continues where it stopped.
var ErrIncomplete = errors.New("the run stopped at its bound of Order info fetches (--sync-max-fetches); the cursor is kept and the next run continues")

// Config is what a Syncer works with.
type Config struct {
	Store  Store
	Client *digicert.Client
	// Logger receives conflicts, skipped orders and, from Every, each
	// round's outcome; nil discards them.
	Logger *slog.Logger
	// Now is the clock of the cursor and the audit trail; nil: time.Now.
	// It must agree with the client's clock (digicert.WithClock).
	Now func() time.Time
	// Instance names this process in the runs it records; "" is
	// hostname:pid.
	Instance string
	// Metrics, if set, are kept up to date.
	Metrics *Metrics
	// Batch is how many orders one transaction stores; 0 is DefaultBatch.
	Batch int
	// MaxFetches bounds the Order info requests of one run (and so how
	// long it holds the sync lock): a run that reaches it stores what it
	// fetched and ends with ErrIncomplete, keeping the cursor; the next
	// run continues. 0: no bound.
	MaxFetches int
	// Webhook, if set, is told of every change of status a run stored
	// (serve's, with CertCentral's webhook received).
	Webhook PollWitness
}

// PollWitness is told of the changes of status a run (the poll) found and
// stored, with the start of the window the run looked at: CertCentral's
// webhook counts those no event announced.
type PollWitness interface {
	PollFound(ctx context.Context, orderID int64, status string, since time.Time)
}

// DefaultMaxFetches is certorder's --sync-max-fetches: about 30 minutes
// of Order info requests at DigiCert's default limits (1000 in 3 minutes).
const DefaultMaxFetches = 10000

// Options are the choices of one run.
type Options struct {
	// DryRun fetches what a run would and reports what it would change,
	// writing nothing: no order, no audit entry, no run, no cursor.
	DryRun bool
	// Full lists every order again and fetches every one, instead
	// of the incremental window.
	Full bool
	// Progress, if set, is called as the run goes.
	Progress func(Progress)
}

// Progress is how far a run has come.
type Progress struct {
	Phase       string // "status changes", "new orders", "renewals", "listing", "storing", "adopting"
	Listed      int    // orders listed so far
	Fetched     int    // Order info answers so far
	ToFetch     int    // orders known to need fetching, fetched ones included
	Requests    int64
	LimiterWait time.Duration
}

// Conflict is a storekit.SyncConflict with member names, for people.
type Conflict struct {
	OrderID int64
	Member  string // who keeps the order, or would have had it
	Other   string // the other member involved, "" if none
	Reason  string
}

// Report is what a run did (in a dry run, would have done).
type Report struct {
	storekit.SyncSummary
	Started time.Time
	Took    time.Duration
	// UnassignedOrders are the orders left unassigned, by division, then
	// number (their count is Unassigned).
	UnassignedOrders []storekit.UpstreamRef
	// ConflictList says what each conflict was (their count is Conflicts).
	ConflictList []Conflict
}

// Syncer runs syncs. Keep one for the life of a process: its client's rate
// limiter then carries over from one run to the next.
type Syncer struct {
	cfg Config
	log *slog.Logger
	now func() time.Time
}

// New returns a Syncer.
func New(cfg Config) (*Syncer, error) {
	if cfg.Store == nil || cfg.Client == nil {
		return nil, errors.New("ccsync: a store and a client are required")
	}
	s := &Syncer{cfg: cfg, log: cfg.Logger, now: cfg.Now}
	if s.log == nil {
		s.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.cfg.Instance == "" {
		host, _ := os.Hostname()
		s.cfg.Instance = host + ":" + strconv.Itoa(os.Getpid())
	}
	if s.cfg.Batch <= 0 {
		s.cfg.Batch = DefaultBatch
	}
	return s, nil
}

// Run runs one sync. It returns ErrBusy, doing nothing, when another sync
// holds the lock. On failure the report says what the run did before it
// stopped; the cursor stays where it was, so the next run does it again.
func (s *Syncer) Run(ctx context.Context, opts Options) (Report, error) {
	lock, ok, err := s.cfg.Store.LockSync(ctx)
	if err != nil {
		return Report{}, fmt.Errorf("sync: taking the sync lock: %w", err)
	}
	if !ok {
		s.cfg.Metrics.skipped()
		return Report{}, ErrBusy
	}
	defer lock.Release()

	r := &run{Syncer: s, opts: opts, lock: lock, before: s.cfg.Client.Stats(), txs: s.cfg.Store, poll: true}
	r.rep.Started = s.now()
	r.rep.DryRun = opts.DryRun
	if opts.DryRun {
		r.dry = NewDryRun(s.cfg.Store)
		r.txs = r.dry
	}
	err = r.finish(ctx, r.do(ctx))
	return r.rep, err
}
