package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/storekit"
)

// nextStepEvery is how often serve counts the orders by next step: a scan
// of every order's dates (no document), about a second for a million on
// SQLite; the steps move by the day.
var nextStepEvery = 5 * time.Minute

// nextStepPage is how many orders one read of that scan takes.
const nextStepPage = 10000

// startNextSteps keeps certorder_orders_by_next_step and
// certorder_orders_next_step_overdue up to date until the returned function
// is called: at once, then every nextStepEvery.
func startNextSteps(ctx context.Context, store storekit.LifecycleReader, reg prometheus.Registerer, w certorder.Windows,
	logger *slog.Logger) func() {
	byStep := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "certorder_orders_by_next_step",
		Help: "Stored orders by their next step (reissue, renew, issue_renewal, renewed, ended, none), counted every few minutes.",
	}, []string{"next_step"})
	overdue := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "certorder_orders_next_step_overdue",
		Help: "Of those, the orders whose step's date has passed: a certificate past its end with the plan going on (reissue), a plan ended without a renewal (renew).",
	}, []string{"next_step"})
	reg.MustRegister(byStep, overdue)
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(nextStepEvery)
		defer t.Stop()
		for {
			if err := countNextSteps(ctx, store, w, byStep, overdue); err != nil && ctx.Err() == nil {
				logger.Warn("counting orders by next step", "err", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() { cancel(); <-done }
}

// countNextSteps counts every stored order by the one rule, Windows.Next.
func countNextSteps(ctx context.Context, store storekit.LifecycleReader, w certorder.Windows, byStep, overdue *prometheus.GaugeVec) error {
	now := time.Now()
	counts, late := map[certorder.Step]int{}, map[certorder.Step]int{}
	for after := int64(0); ; {
		page, err := store.Lifecycles(ctx, after, nextStepPage)
		if err != nil {
			return err
		}
		for _, o := range page {
			n := w.Next(o.Lifecycle, now)
			counts[n.Step]++
			if n.Overdue(now) {
				late[n.Step]++
			}
		}
		if len(page) < nextStepPage {
			break
		}
		after = page[len(page)-1].ID
	}
	for _, s := range certorder.Steps {
		byStep.WithLabelValues(string(s)).Set(float64(counts[s]))
		overdue.WithLabelValues(string(s)).Set(float64(late[s]))
	}
	return nil
}
