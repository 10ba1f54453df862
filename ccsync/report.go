package ccsync

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/certorder/certorder/digicert"
	"github.com/certorder/certorder/internal/printable"
	"github.com/certorder/certorder/internal/storekit"
)

// Line is the run's one-line summary; failed says the run did not finish.
func (r Report) Line(failed bool) string {
	var b strings.Builder
	b.WriteString("sync ")
	switch {
	case r.DryRun && r.Incomplete:
		b.WriteString("dry run stopped at its bound of fetches, nothing written")
	case r.DryRun && failed:
		b.WriteString("dry run failed")
	case r.DryRun:
		b.WriteString("dry run, nothing written")
	case r.Incomplete:
		b.WriteString("incomplete, cursor kept, the next run continues")
	case failed:
		b.WriteString("failed, cursor kept")
	default:
		b.WriteString("ok")
	}
	mode := "incremental"
	if r.Full {
		mode = "full"
	}
	fmt.Fprintf(&b, " (%s, %s): listed %d, fetched %d", mode, r.Took.Round(time.Millisecond), r.Listed, r.Fetched)
	if len(r.ByStatus) > 0 {
		b.WriteString(" (")
		for i, st := range slices.Sorted(maps.Keys(r.ByStatus)) {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%s %d", printable.String(st), r.ByStatus[st]) // a record an older certorder wrote holds them raw
		}
		b.WriteString(")")
	}
	fmt.Fprintf(&b, ", new %d, changed %d, renewals linked %d, reissues %d, unassigned %d, conflicts %d, upstream errors %d, requests %d",
		r.New, r.Changed, r.Renewals, r.Reissues, r.Unassigned, r.Conflicts, r.UpstreamErrors, r.Requests)
	if r.Retries > 0 {
		fmt.Fprintf(&b, " (%d retried)", r.Retries)
	}
	if r.LimiterWait > 0 {
		fmt.Fprintf(&b, ", waited %s on the rate limiter", r.LimiterWait.Round(time.Millisecond))
	}
	return b.String()
}

// MaxStatuses bounds the statuses a report counts by name: orders of any
// further status are counted as OtherStatus. CertCentral knows about a
// dozen; a hostile listing of thousands would otherwise make the summary,
// and the run record that keeps it, as long as it likes.
const MaxStatuses = 20

// OtherStatus counts the orders of the statuses beyond MaxStatuses.
const OtherStatus = "other"

// MaxError bounds the error a run record keeps (and admin sync status
// prints).
const MaxError = 2048

// countStatus counts an order of the status, as it may be shown
// (printable.String: escaped and bounded), within MaxStatuses.
func (r *Report) countStatus(status string) {
	if r.ByStatus == nil {
		r.ByStatus = map[string]int{}
	}
	key := printable.String(status)
	if _, ok := r.ByStatus[key]; !ok && len(r.ByStatus) >= MaxStatuses {
		key = OtherStatus
	}
	r.ByStatus[key]++
}

// UnassignedByDivision describes the unassigned orders, one line per
// division with its count and up to perDivision of their numbers.
func UnassignedByDivision(refs []storekit.UpstreamRef, perDivision int) []string {
	var lines []string
	for i := 0; i < len(refs); {
		j := i
		for j < len(refs) && refs[j].Container == refs[i].Container {
			j++
		}
		var ids []string
		for _, ref := range refs[i:min(j, i+perDivision)] {
			ids = append(ids, strconv.FormatInt(ref.ID, 10))
		}
		if j-i > perDivision {
			ids = append(ids, "...")
		}
		lines = append(lines, fmt.Sprintf("division %d: %d unassigned order(s): %s", refs[i].Container, j-i, strings.Join(ids, " ")))
		i = j
	}
	return lines
}

// Every runs a sync at once, then again every interval after the last
// one ended, until ctx ends. A round for which another instance holds the
// sync lock is skipped, and logged as such.
func (s *Syncer) Every(ctx context.Context, interval time.Duration) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rep, err := s.Run(ctx, Options{})
		switch {
		case errors.Is(err, ErrBusy):
			s.log.Info("sync skipped: another instance is syncing", "instance", s.cfg.Instance)
		case errors.Is(err, ErrIncomplete):
			s.log.Info("sync incomplete: stopped at its bound of fetches; the next round continues", "summary", rep.Line(true))
		case err != nil && ctx.Err() != nil:
			return
		case err != nil:
			s.log.Error("sync failed; the next round does its window again", "err", err, "summary", rep.Line(true))
		default:
			s.log.Info("sync", "summary", rep.Line(false))
		}
		// Every instance shows the last success, whichever instance had it.
		if st, err := s.cfg.Store.SyncState(ctx, 1); err == nil {
			s.cfg.Metrics.observe(st)
		}
		t.Reset(interval)
	}
}

// Metrics are the sync's Prometheus metrics.
type Metrics struct {
	lastSuccess prometheus.Gauge
	runs        *prometheus.CounterVec // by outcome
	changes     *prometheus.CounterVec // by change
	requests    *prometheus.CounterVec // by HTTP status
	unassigned  prometheus.Gauge
}

// NewMetrics registers the sync's metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		lastSuccess: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "certorder_sync_last_success_timestamp_seconds",
			Help: "When the last successful CertCentral sync started (the cursor), by any instance; 0 before the first.",
		}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "certorder_sync_runs_total", Help: "Sync rounds of this instance by outcome: ok, failed, incomplete (stopped at --sync-max-fetches; the next continues), or skipped (another instance was syncing).",
		}, []string{"outcome"}),
		changes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "certorder_sync_orders_changed_total",
			Help: "Members' orders the sync changed, by change: added, adopted (was unassigned), status, renewed, reissued, updated.",
		}, []string{"change"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "certorder_sync_upstream_requests_total",
			Help: "Requests to the CertCentral Services API by HTTP status (error: no answer), retries included.",
		}, []string{"status"}),
		unassigned: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "certorder_sync_unassigned_orders", Help: "Upstream orders no member owns, after this instance's last run.",
		}),
	}
	reg.MustRegister(m.lastSuccess, m.runs, m.changes, m.requests, m.unassigned)
	return m
}

func (m *Metrics) skipped() {
	if m != nil {
		m.runs.WithLabelValues("skipped").Inc()
	}
}

func (m *Metrics) changed(kind string, dry bool) {
	if m != nil && !dry {
		m.changes.WithLabelValues(kind).Inc()
	}
}

func (m *Metrics) ran(rep Report, after, before digicert.Stats, ok bool) {
	if m == nil {
		return
	}
	outcome := "failed"
	switch {
	case ok:
		outcome = "ok"
		m.lastSuccess.Set(float64(rep.Started.Unix()))
	case rep.Incomplete:
		outcome = "incomplete"
	}
	m.runs.WithLabelValues(outcome).Inc()
	m.requested(after, before)
	if !rep.DryRun {
		m.unassigned.Set(float64(rep.Unassigned))
	}
}

// requested counts the requests made between two of the client's stats.
func (m *Metrics) requested(after, before digicert.Stats) {
	if m == nil {
		return
	}
	for status, n := range after.ByStatus {
		label := strconv.Itoa(status)
		if status == 0 {
			label = "error"
		}
		if d := n - before.ByStatus[status]; d > 0 {
			m.requests.WithLabelValues(label).Add(float64(d))
		}
	}
}

func (m *Metrics) observe(st storekit.SyncState) {
	if m != nil && !st.Cursor.IsZero() {
		m.lastSuccess.Set(float64(st.Cursor.Unix()))
	}
}
