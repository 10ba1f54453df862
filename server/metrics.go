package server

import (
	"maps"
	"runtime"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/certorder/certorder/internal/buildinfo"
	"github.com/certorder/certorder/wire"
)

// metrics are the service's Prometheus metrics.
type metrics struct {
	requests     *prometheus.CounterVec   // by action and outcome
	latency      *prometheus.HistogramVec // by action
	authFailures prometheus.Counter
	limited      *prometheus.CounterVec // by limit
	storeErrors  prometheus.Counter
	auditDropped prometheus.Counter

	// The handles of requests and latency, by action ("other" for any
	// other) and outcome, made once: WithLabelValues hashes its labels on
	// every call.
	byAction map[string]*actionMetrics
}

type actionMetrics struct {
	latency  prometheus.Observer
	outcomes map[wire.Code]prometheus.Counter
}

// observe counts a request and its latency.
func (m *metrics) observe(action string, code wire.Code, latency time.Duration) {
	am := m.byAction[action]
	if am == nil {
		action, am = "other", m.byAction["other"]
	}
	am.latency.Observe(latency.Seconds())
	if c := am.outcomes[code]; c != nil {
		c.Inc()
		return
	}
	m.requests.WithLabelValues(action, code.Outcome()).Inc()
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "certorder_requests_total", Help: "API requests by action and outcome (ok or the error's name).",
		}, []string{"action", "outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "certorder_request_duration_seconds", Help: "Time to answer an API request, by action.",
			Buckets: []float64{.0002, .0005, .001, .002, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"action"}),
		authFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "certorder_auth_failures_total", Help: "Requests whose credentials were rejected.",
		}),
		limited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "certorder_rate_limited_total", Help: "Requests refused by a limit: member, ip, auth_lockout or in_flight.",
		}, []string{"limit"}),
		storeErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "certorder_store_errors_total", Help: "Requests that failed because the store failed.",
		}),
		auditDropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "certorder_audit_dropped_total", Help: "Audit entries dropped because the audit writer was behind.",
		}),
	}
	m.byAction = map[string]*actionMetrics{}
	for _, action := range append(slices.Sorted(maps.Keys(wire.Actions)), "other") {
		am := &actionMetrics{latency: m.latency.WithLabelValues(action), outcomes: map[wire.Code]prometheus.Counter{}}
		for _, code := range append(wire.Codes(), 0) {
			am.outcomes[code] = m.requests.WithLabelValues(action, code.Outcome())
		}
		m.byAction[action] = am
	}
	bi := buildinfo.Get()
	buildInfo := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "certorder_build_info", Help: "Always 1; the labels say which build runs.",
		ConstLabels: prometheus.Labels{"version": bi.Version, "commit": bi.Commit, "date": bi.Date, "goversion": runtime.Version()},
	})
	buildInfo.Set(1)
	if reg != nil {
		reg.MustRegister(m.requests, m.latency, m.authFailures, m.limited, m.storeErrors, m.auditDropped, buildInfo)
	}
	return m
}
