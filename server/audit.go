package server

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/certorder/certorder"
)

// auditor writes the audit trail in the background, in batches, so that an
// answer never waits for it. When it falls behind, entries are dropped and
// counted (certorder_audit_dropped_total) rather than slowing answers.
type auditor struct {
	store     certorder.AuditStore
	ch        chan certorder.AuditEntry
	retention time.Duration
	now       func() time.Time
	dropped   prometheus.Counter
	logger    *slog.Logger
	done      chan struct{}
}

const (
	auditBuffer = 8192                   // entries waiting to be written
	auditBatch  = 512                    // entries written in one transaction at most
	auditFlush  = 250 * time.Millisecond // how long an entry may wait
	auditPrune  = time.Hour              // how often entries past retention are deleted
)

func newAuditor(store certorder.AuditStore, retention time.Duration, now func() time.Time, dropped prometheus.Counter, logger *slog.Logger) *auditor {
	a := &auditor{store: store, ch: make(chan certorder.AuditEntry, auditBuffer), retention: retention,
		now: now, dropped: dropped, logger: logger, done: make(chan struct{})}
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

func (a *auditor) run() {
	defer close(a.done)
	tick := time.NewTicker(auditFlush)
	defer tick.Stop()
	batch := make([]certorder.AuditEntry, 0, auditBatch)
	flush := func() {
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
