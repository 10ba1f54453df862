package server

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/certorder/certorder"
)

// auditor writes the audit trail in the background, in batches, so that an
// answer never waits for it. When it falls behind, entries are dropped and
// counted (certorder_audit_dropped_total) rather than slowing answers.
//
// Requests refused before authentication (a flood the limits turn away)
// are not queued one by one: they are counted per client IP and outcome,
// and each flush writes one entry per pair with its count. So a flood
// neither fills the trail nor crowds out the entries of real traffic.
type auditor struct {
	store     certorder.AuditStore
	ch        chan certorder.AuditEntry
	retention time.Duration
	now       func() time.Time
	dropped   prometheus.Counter
	logger    *slog.Logger
	done      chan struct{}

	mu      sync.Mutex
	refused map[refusal]*certorder.AuditEntry
}

// refusal is what refused requests are counted by.
type refusal struct {
	ip      string
	outcome int
}

const (
	auditBuffer = 16384                  // entries waiting to be written
	auditBatch  = 4096                   // entries written in one segment at most
	auditFlush  = 250 * time.Millisecond // how long an entry may wait
	auditPrune  = time.Hour              // how often entries past retention are deleted
	maxRefusals = 10000                  // pairs counted at once; beyond, one entry for all other IPs
)

func newAuditor(store certorder.AuditStore, retention time.Duration, now func() time.Time, dropped prometheus.Counter, logger *slog.Logger) *auditor {
	a := &auditor{store: store, ch: make(chan certorder.AuditEntry, auditBuffer), retention: retention,
		now: now, dropped: dropped, logger: logger, done: make(chan struct{}), refused: map[refusal]*certorder.AuditEntry{}}
	go a.run()
	return a
}

// record queues an entry; it never blocks.
func (a *auditor) record(e certorder.AuditEntry) {
	select {
	case a.ch <- e:
	default:
		a.dropped.Inc()
	}
}

// refuse counts a request refused before authentication.
func (a *auditor) refuse(e certorder.AuditEntry) {
	a.mu.Lock()
	defer a.mu.Unlock()
	k := refusal{e.ClientIP, e.Outcome}
	if _, ok := a.refused[k]; !ok && len(a.refused) >= maxRefusals {
		k.ip = "*"
	}
	if agg := a.refused[k]; agg != nil {
		agg.Count++
		return
	}
	a.refused[k] = &certorder.AuditEntry{Time: e.Time, ClientIP: k.ip, Outcome: e.Outcome, Count: 1}
}

// takeRefused returns the counted refusals and starts counting anew.
func (a *auditor) takeRefused() []certorder.AuditEntry {
	a.mu.Lock()
	defer a.mu.Unlock()
	es := make([]certorder.AuditEntry, 0, len(a.refused))
	for _, e := range a.refused {
		es = append(es, *e)
	}
	clear(a.refused)
	return es
}

func (a *auditor) run() {
	defer close(a.done)
	tick := time.NewTicker(auditFlush)
	defer tick.Stop()
	batch := make([]certorder.AuditEntry, 0, auditBatch)
	flush := func() {
		batch = append(batch, a.takeRefused()...)
		if len(batch) == 0 {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := a.store.AppendAudit(ctx, batch); err != nil {
			a.logger.Error("audit write failed; entries dropped", "entries", len(batch), "err", err)
			a.dropped.Add(float64(len(batch)))
		}
		batch = batch[:0]
	}
	var pruned time.Time
	for {
		select {
		case e, ok := <-a.ch:
			if !ok {
				flush()
				return
			}
			batch = append(batch, e)
			if len(batch) == auditBatch {
				flush()
			}
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

// close writes what is queued and stops. No record may follow it.
func (a *auditor) close() {
	close(a.ch)
	<-a.done
}
