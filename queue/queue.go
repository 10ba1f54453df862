// Package queue is certorder's one durable job queue: everything the
// service does later and must not lose (a webhook delivery, an e-mail
// notice, an upstream event to apply) is a Job of some kind in one table of
// the store, written in the transaction of the change that causes it.
//
// The store keeps the jobs and does what is the same for every kind: claim
// (with a lease, fairly by member when asked), finish (done, failed, or
// again later), retry on request, list, prune. What differs by kind (what
// the payload means, how long an attempt may take, how many attempts,
// whose turn is next) is the consumer's: webhook.Worker's deliveries,
// mailer.Worker's notices, the CertCentral events' handler. A new kind is a
// name and a handler, not a table or a store method.
//
// Modelled on riverqueue/river (kinds, attempts, a lease per claim,
// InsertTx); River itself is not used: it has no SQLite driver that meets
// the fairness by member the deliveries need (docs/ARCHITECTURE.md).
package queue

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The kinds of job, each with its one consumer.
const (
	// KindWebhook is a message to a member's webhook endpoint (the
	// subject): webhook.Worker.
	KindWebhook = "webhook"
	// KindNoticeEvent, KindNoticeDigest and KindNoticeConfirm are e-mails
	// to a member's notice address (the subject): one event, a day's
	// digest, an address's confirmation link; mailer.Worker.
	KindNoticeEvent   = "notice.event"
	KindNoticeDigest  = "notice.digest"
	KindNoticeConfirm = "notice.confirm"
	// KindCertCentralEvent is an event CertCentral's webhook sent about an
	// order (the subject: the order's number; keyed by it, so that copies
	// of it wait as one): ccwebhook.Worker applies it through the sync.
	KindCertCentralEvent = "certcentral.event"
)

// NoticeKinds are the kinds of e-mail notice.
var NoticeKinds = []string{KindNoticeEvent, KindNoticeDigest, KindNoticeConfirm}

// The states of a job.
const (
	Pending = "pending" // waits for RunAfter
	Running = "running" // claimed: held until LeaseUntil, then pending again
	Done    = "done"    // finished: it did what it was for
	Failed  = "failed"  // finished: given up
)

// Job is one thing to do later.
type Job struct {
	ID   int64
	Kind string
	// MemberID is whose the job is: a claim can take members in turn.
	MemberID int64
	// SubjectID is what the job is for within its kind (a webhook
	// endpoint, a notice address, an upstream order); 0: nothing. Deleting the subject
	// deletes its jobs; a claim can skip subjects.
	SubjectID int64
	// Key, when set, makes the job one of a kind among those pending:
	// Enqueue adds to the pending job with the same kind and key instead.
	Key         string
	Payload     []byte // the kind's, opaque to the store
	State       string
	Attempts    int       // attempts finished
	RunAfter    time.Time // when it is (or was) due
	Owner       string    // who holds it (running)
	LeaseUntil  time.Time // when its lease ends (running)
	CreatedAt   time.Time
	LastAttempt time.Time // zero before the first
	LastError   string
	Result      []byte // the kind's record of the last attempt, opaque to the store
}

// Claim says what ClaimJobs takes: up to Limit jobs of Kinds due at At,
// each held for Lease (Running; once the lease is over it is pending
// again, so that a crashed worker's jobs are retried).
type Claim struct {
	Kinds []string
	Owner string // who claims: the instance and worker, kept with the lease
	At    time.Time
	Lease time.Duration
	Limit int
	// RoundRobin takes at most one job per member, members in the order of
	// their oldest due job, so that no member's backlog stands before
	// another's.
	RoundRobin bool
	// Served puts these members after every other, in this order (the
	// consumer lists the members it served lately, the busiest and most
	// recently served last): a member waiting its turn is taken before
	// those whose jobs are under way already, however old their backlog.
	Served []int64
	// SkipSubjects and SkipMembers take nothing of these (they have enough
	// under way already).
	SkipSubjects, SkipMembers []int64
}

// Outcome is how an attempt at a claimed job ended, as its consumer decided.
type Outcome struct {
	JobID    int64
	Owner    string    // the claim's: an outcome of a lease lost meanwhile is refused
	At       time.Time // when the attempt was made
	State    string    // Done, Failed, or Pending to try again at RunAfter
	RunAfter time.Time
	Error    string // what went wrong, for the member or the operator to read
	Result   []byte // the kind's record of the attempt; nil keeps the last one
}

// List selects jobs to show: those of a kind, a member and a subject,
// newest first.
type List struct {
	Kind      string
	MemberID  int64
	SubjectID int64
	Limit     int
}

// Store is what a consumer of the queue uses of the store; each consumer's
// store interface embeds it.
type Store interface {
	// Enqueue adds jobs, due at their RunAfter (zero: now). One with a Key
	// joins the pending job of its kind with that key, if there is one
	// (its payload is then left as it was). It returns their IDs.
	Enqueue(ctx context.Context, jobs ...Job) ([]int64, error)
	// ClaimJobs takes due jobs and holds them (see Claim). Several
	// instances on one store never take the same job.
	ClaimJobs(ctx context.Context, c Claim) ([]Job, error)
	// FinishJob records an attempt's outcome: the attempt counted, the job
	// done, failed, or pending again. ErrConflict if the job is no longer
	// held by o.Owner (its lease ran out and another claim took it).
	FinishJob(ctx context.Context, o Outcome) error
	// RetryJob makes a finished job of the member's subject pending again
	// at once, its attempts from zero: ErrNotFound if there is no such
	// job, ErrConflict if it is pending or running still (sending it
	// again now could do it twice at once).
	RetryJob(ctx context.Context, kind string, memberID, subjectID, id int64) error
	// Jobs lists the jobs l selects, newest first.
	Jobs(ctx context.Context, l List) ([]Job, error)
	// PruneJobs deletes the jobs of kinds finished before before.
	PruneJobs(ctx context.Context, kinds []string, before time.Time) error
}

// schedule is the Standard Webhooks example schedule: the wait after each
// failed attempt. With the first, immediate attempt it makes MaxAttempts
// attempts over 75 h 35 min (about three days) before a job is failed:
//
//	attempt  1  at  0:00:00  (immediately)
//	attempt  2  at  0:00:05  (+5 s)
//	attempt  3  at  0:05:05  (+5 min)
//	attempt  4  at  0:35:05  (+30 min)
//	attempt  5  at  2:35:05  (+2 h)
//	attempt  6  at  7:35:05  (+5 h)
//	attempt  7  at 17:35:05  (+10 h)
//	attempt  8  at 31:35:05  (+14 h)
//	attempt  9  at 51:35:05  (+20 h)
//	attempt 10  at 75:35:05  (+24 h)
//
// Each wait is jittered by ±20 % (Backoff), so the whole span is 60 to 91 h.
var schedule = [...]time.Duration{
	5 * time.Second,
	5 * time.Minute,
	30 * time.Minute,
	2 * time.Hour,
	5 * time.Hour,
	10 * time.Hour,
	14 * time.Hour,
	20 * time.Hour,
	24 * time.Hour,
}

// MaxAttempts is how many attempts the schedule makes, the first included;
// a consumer gives up after its last.
const MaxAttempts = len(schedule) + 1

// jitter is the spread of a wait around the schedule: ±20 %.
const jitter = 0.2

// Backoff is the wait after failed attempt number attempt (1 = the first,
// immediate attempt) before the next one: the schedule's wait times a
// random factor in [0.8, 1.2), so that the jobs of a receiver that was down
// for a while do not all come back at the same moment. Attempts past the
// schedule get its last wait. r nil means the global source.
func Backoff(attempt int, r *rand.Rand) time.Duration {
	i := min(max(attempt, 1), len(schedule)) - 1
	f := rand.Float64()
	if r != nil {
		f = r.Float64()
	}
	return time.Duration(float64(schedule[i]) * (1 - jitter + 2*jitter*f))
}

// Owner names a worker for its claims: the host, the process, the
// worker's name and a random tag (one process may run two instances, as
// the tests do), unique among the instances sharing a store.
func Owner(worker string) string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s/%d/%s/%08x", host, os.Getpid(), worker, rand.Uint32())
}

// RoundsCounter is the metric of a consumer's rounds (each a look for new
// work and the jobs due): certorder_worker_rounds_total{worker}. A test, or
// an operator, that saw a round end after a change knows the consumer has
// seen it.
func RoundsCounter(worker string) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Name: "certorder_worker_rounds_total",
		Help: "Rounds of the background workers (a look for new work and the jobs due), by worker.", ConstLabels: prometheus.Labels{"worker": worker}})
}
