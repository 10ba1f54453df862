package webhook

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/certorder/certorder"
)

// ending records the events of an end, typ: order.expiring as a
// certificate's end comes near while its order has no issued renewal,
// order.plan_ending as a plan's end comes near while it has no renewal at
// all (neither for an order canceled, rejected or revoked). Each is told
// once per order, end and threshold, and only the nearest threshold crossed
// is told (an order first seen 5 days before its end hears "5 days", not
// also "30"); a reissued certificate's new end is told afresh.
func (w *Worker) ending(ctx context.Context, now time.Time, typ string, thresholds []int) error {
	today := now.UTC()
	from := today.Format(certorder.DateLayout)
	to := today.AddDate(0, 0, thresholds[len(thresholds)-1]).Format(certorder.DateLayout)
	orders, err := w.cfg.Store.EndingOrders(ctx, typ, from, to)
	if err != nil {
		return err
	}
	for _, o := range orders {
		next := w.cfg.Windows.Next(o.Lifecycle(), now)
		switch {
		case next.Step == certorder.StepEnded, o.Renewal == certorder.RenewalIssued,
			typ == certorder.EventOrderPlanEnding && o.Renewal != certorder.RenewalNone:
			continue
		}
		days := certorder.DaysRemaining(o.End(typ), now)
		var crossed []int
		for _, t := range thresholds {
			if days <= t && !slices.Contains(o.Notified, t) {
				crossed = append(crossed, t)
			}
		}
		if len(crossed) == 0 {
			continue
		}
		var data any = ExpiringData{OrderID: o.ID, ValidTill: o.Certificate.ValidTill, DaysRemaining: days,
			OrderValidTill: o.PlanTill, NextStep: next.Step}
		if typ == certorder.EventOrderPlanEnding {
			data = PlanEndingData{OrderID: o.ID, OrderValidTill: o.PlanTill, DaysRemaining: days,
				ValidTill: o.Certificate.ValidTill, NextStep: next.Step}
		}
		raw, err := json.Marshal(data)
		if err != nil {
			return err
		}
		if _, err := w.cfg.Store.RecordEnding(ctx, typ, o, crossed, raw, now); err != nil {
			return err
		}
	}
	return nil
}
