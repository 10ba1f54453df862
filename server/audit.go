package server

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/storekit"
)

// auditor writes the audit trail in the background, in batches, so that an
// answer never waits for it. When it falls behind, entries are dropped and
// counted (certorder_audit_dropped_total) rather than slowing answers.
//
// A request appends its entry to a slice under a mutex; the writer swaps
// the slice out every auditFlush (or as soon as a batch is full) and
// writes it. There is no wake-up per entry: a channel woke the writer for
// nearly every request under load.
//
// Requests refused before authentication (a flood the limits turn away)
// are not queued one by one: they are counted per client IP and outcome,
// and each flush writes one entry per pair with its count. So a flood
// neither fills the trail nor crowds out the entries of real traffic.
type auditor struct {
	store     storekit.AuditStore
	retention time.Duration
	now       func() time.Time
	dropped   prometheus.Counter
	logger    *slog.Logger
	kick      chan struct{} // a batch is full: write now
	stop      chan struct{}
	done      chan struct{}

	mu      sync.Mutex
	pending []certorder.AuditEntry
	closed  bool
	refused map[refusal]*certorder.AuditEntry
	order   []refusal // refused's keys, in the order first seen: the entries are written so
	named   int       // refused's entries of credentials refused, by the name they named
}

// refusal is what refused requests are counted by: the client IP and the
// outcome (refused before authentication), or the member named and the
// outcome (credentials refused, from any address).
type refusal struct {
	ip      string
	member  string
	action  string // "web" for the web page's, "" for the API's
	outcome int
}

const (
	auditBuffer = 16384                  // entries waiting to be written
	auditBatch  = 4096                   // entries written in one segment at most
	auditFlush  = 250 * time.Millisecond // how long an entry may wait
	auditPrune  = time.Hour              // how often entries past retention are deleted
	maxRefusals = 10000                  // pairs counted at once; beyond, one entry for all other IPs
	// maxNamed bounds the names whose refused credentials a flush writes
	// one entry each; beyond, one entry for all other names. A different
	// AccessName on each request wrote one entry each (with the limits
	// off, nothing else stops one address doing so): now at most 400 a
	// second, whatever the limits.
	maxNamed = 100
)

func newAuditor(store storekit.AuditStore, retention time.Duration, now func() time.Time, dropped prometheus.Counter, logger *slog.Logger) *auditor {
	a := &auditor{store: store, retention: retention, now: now, dropped: dropped, logger: logger,
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
		pending: make([]certorder.AuditEntry, 0, auditBatch), refused: map[refusal]*certorder.AuditEntry{}}
	go a.run()
	return a
}

// record queues an entry; it never blocks.
func (a *auditor) record(e certorder.AuditEntry) {
	a.mu.Lock()
	if a.closed || len(a.pending) >= auditBuffer {
		a.mu.Unlock()
		a.dropped.Inc()
		return
	}
	a.pending = append(a.pending, e)
	full := len(a.pending)%auditBatch == 0
	a.mu.Unlock()
	if full {
		select {
		case a.kick <- struct{}{}:
		default:
		}
	}
}

// refuse counts a request refused before authentication (the API's, or
// the web page's: action "web").
func (a *auditor) refuse(e certorder.AuditEntry) {
	a.mu.Lock()
	defer a.mu.Unlock()
	k := refusal{ip: e.ClientIP, action: e.Action, outcome: e.Outcome}
	if _, ok := a.refused[k]; !ok && len(a.refused) >= maxRefusals {
		k.ip = "*"
	}
	if agg := a.refused[k]; agg != nil {
		agg.Count++
		return
	}
	a.refused[k] = &certorder.AuditEntry{Time: e.Time, ClientIP: k.ip, Action: e.Action, Outcome: e.Outcome, Count: 1}
	a.order = append(a.order, k)
}

// refuseCredentials counts a request whose credentials were refused (a
// wrong or revoked key, or none), per member named and outcome, whatever
// the address: a guessing run from thousands of addresses is a few entries
// a second, not one each. The entry keeps the address, key ID and action
// while they are the same for every request it counts, else "*" or none.
func (a *auditor) refuseCredentials(e certorder.AuditEntry) {
	a.mu.Lock()
	defer a.mu.Unlock()
	k := refusal{member: e.Member, outcome: e.Outcome}
	if _, ok := a.refused[k]; !ok && (len(a.refused) >= maxRefusals || a.named >= maxNamed) {
		k.member = "*"
	}
	if agg := a.refused[k]; agg != nil {
		agg.Count++
		if agg.ClientIP != e.ClientIP {
			agg.ClientIP = "*"
		}
		if agg.KeyID != e.KeyID {
			agg.KeyID = ""
		}
		if agg.Action != e.Action {
			agg.Action = ""
		}
		if agg.OrderID != e.OrderID {
			agg.OrderID = 0
		}
		return
	}
	e.Member, e.Count = k.member, 1
	a.refused[k] = &e
	a.order = append(a.order, k)
	a.named++
}

// take returns the queued entries and the counted refusals, and starts
// anew; spare is the slice to queue into next.
func (a *auditor) take(spare []certorder.AuditEntry) []certorder.AuditEntry {
	a.mu.Lock()
	defer a.mu.Unlock()
	es := a.pending
	a.pending = spare[:0]
	for _, k := range a.order {
		es = append(es, *a.refused[k])
	}
	clear(a.refused)
	a.order, a.named = a.order[:0], 0
	return es
}

func (a *auditor) run() {
	defer close(a.done)
	tick := time.NewTicker(auditFlush)
	defer tick.Stop()
	spare := make([]certorder.AuditEntry, 0, auditBatch)
	flush := func() {
		es := a.take(spare)
		for batch := range slices.Chunk(es, auditBatch) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			if err := a.store.AppendAudit(ctx, batch); err != nil {
				a.logger.Error("audit write failed; entries dropped", "entries", len(batch), "err", err)
				a.dropped.Add(float64(len(batch)))
			}
			cancel()
		}
		clear(es) // let the strings go
		spare = es[:0]
	}
	var pruned time.Time
	for {
		select {
		case <-a.stop:
			flush()
			return
		case <-a.kick:
			flush()
		case <-tick.C:
			flush()
			if now := a.now(); now.Sub(pruned) >= auditPrune {
				pruned = now
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				if _, err := a.store.PruneAudit(ctx, now.Add(-a.retention)); err != nil {
					a.logger.Error("audit prune failed", "err", err)
				}
				cancel()
			}
		}
	}
}

// close writes what is queued and stops; entries recorded after it are dropped.
func (a *auditor) close() {
	a.mu.Lock()
	a.closed = true
	a.mu.Unlock()
	close(a.stop)
	<-a.done
}
