package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/ccsync"
	"github.com/certorder/certorder/ccwebhook"
	"github.com/certorder/certorder/internal/credcache"
	"github.com/certorder/certorder/internal/testdb"
	"github.com/certorder/certorder/mailer"
	"github.com/certorder/certorder/server"
	"github.com/certorder/certorder/stores"
	"github.com/certorder/certorder/webhook"
)

// recorder is a Registerer that notes the name of every metric registered
// through it, vectors without a series yet included.
type recorder struct {
	prometheus.Registerer
	names map[string]bool
}

var descName = regexp.MustCompile(`fqName: "([^"]+)"`)

func (r *recorder) Register(c prometheus.Collector) error {
	ch := make(chan *prometheus.Desc)
	go func() { c.Describe(ch); close(ch) }()
	for d := range ch {
		if m := descName.FindStringSubmatch(d.String()); m != nil {
			r.names[m[1]] = true
		}
	}
	return r.Registerer.Register(c)
}

func (r *recorder) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

// exportedMetrics is the name of every metric serve can export, registered
// by the code serve registers them with (its sync and webhooks on).
func exportedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	store, err := stores.Open(context.Background(), testdb.SQLite(t))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	reg := &recorder{Registerer: prometheus.NewRegistry(), names: map[string]bool{}}
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	registerCacheMetrics(reg, credcache.NewStore(store, nil, 0, time.Second))
	h, err := server.New(store, server.Config{CASegment: "digicert", Metrics: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	webhook.NewWorker(webhook.WorkerConfig{Store: store, Metrics: reg})
	mailer.NewWorker(mailer.WorkerConfig{Store: store, Metrics: reg})
	ccsync.NewMetrics(reg)
	ccwebhook.NewMetrics(reg)
	defer startNextSteps(context.Background(), store, reg, certorder.DefaultWindows, slog.New(slog.DiscardHandler))()
	families, err := reg.Registerer.(*prometheus.Registry).Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if !reg.names[f.GetName()] {
			t.Errorf("%s is registered but the recorder missed it", f.GetName())
		}
	}
	return reg.names
}

// metricRef is a name an expression reads: one followed by a selector, a
// range, or standing where a metric can (the prefixes certorder exports).
var metricRef = regexp.MustCompile(`\b(?:certorder|go|process)_[a-zA-Z0-9_]+\b|\bup\{`)

// known says whether an expression's metric name is exported: a
// histogram's _bucket, _sum and _count series included; "up" is
// Prometheus's own.
func known(exported map[string]bool, name string) bool {
	if name == "up{" || exported[name] {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && exported[base] {
			return true
		}
	}
	return false
}

// Every expression of the Grafana dashboard, and every metric the alert
// rules name, is one certorder exports.
func TestDashboardAndRulesUseExportedMetrics(t *testing.T) {
	t.Parallel()
	exported := exportedMetrics(t)
	for _, want := range []string{"certorder_requests_total", "certorder_sync_last_success_timestamp_seconds",
		"certorder_webhook_queue_age_seconds", "go_goroutines", "process_resident_memory_bytes"} {
		if !exported[want] {
			t.Fatalf("the recorder did not see %s: %v", want, exported)
		}
	}

	b, err := os.ReadFile("../../packaging/grafana/certorder.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash any
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("certorder.json: %v", err)
	}
	var exprs []string
	var walk func(v any, key string)
	walk = func(v any, key string) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				walk(x, k)
			}
		case []any:
			for _, x := range v {
				walk(x, key)
			}
		case string:
			if key == "expr" || key == "definition" {
				exprs = append(exprs, v)
			}
		}
	}
	walk(dash, "")
	if len(exprs) < 10 {
		t.Fatalf("the dashboard has %d expressions", len(exprs))
	}
	for _, e := range exprs {
		names := metricRef.FindAllString(e, -1)
		if len(names) == 0 {
			t.Errorf("dashboard expression names no metric: %s", e)
		}
		for _, n := range names {
			if !known(exported, n) {
				t.Errorf("dashboard expression names %s, which certorder does not export: %s", n, e)
			}
		}
	}

	rules, err := os.ReadFile("../../packaging/prometheus/certorder-rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	var used []string
	for _, line := range strings.Split(string(rules), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		used = append(used, metricRef.FindAllString(line, -1)...)
	}
	if len(used) < 10 {
		t.Fatalf("the rules name %d metrics", len(used))
	}
	for _, n := range slices.Compact(slices.Sorted(slices.Values(used))) {
		if !known(exported, n) {
			t.Errorf("certorder-rules.yml names %s, which certorder does not export", n)
		}
	}
}
