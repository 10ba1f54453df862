package certorder

import (
	"testing"
	"time"
)

// The next step at the boundaries of its windows, with a fixed clock: the
// certificates of today's and tomorrow's limits (199, 100 and 47 days) in
// one- and three-year plans, pending, renewed and ended orders.
func TestNextStep(t *testing.T) {
	now := time.Date(2027, 6, 1, 15, 0, 0, 0, time.UTC) // its date counts: 2027-06-01
	day := func(offset int) string { return now.AddDate(0, 0, offset).Format(DateLayout) }
	// cert is a certificate of the given lifetime ending in left days.
	cert := func(lifetime, left int) (from, till string) { return day(left - lifetime), day(left) }
	w := DefaultWindows
	type tc struct {
		name string
		l    Lifecycle
		want NextStep
	}
	var cases []tc
	for _, life := range []struct {
		days, window int
	}{{199, 30}, {100, 30}, {47, 15}} {
		for _, plan := range []int{365, 3 * 365} {
			from, till := cert(life.days, life.window) // the first day of the window
			cases = append(cases, tc{"window opens", Lifecycle{Status: "issued", ValidFrom: from, ValidTill: till, PlanTill: day(plan)},
				NextStep{Step: StepReissue, Due: till}})
			from, till = cert(life.days, life.window+1) // the day before it
			want := NextStep{Step: StepNone}
			if plan <= w.Renewal {
				want = NextStep{Step: StepRenew, Due: day(plan)}
			}
			cases = append(cases, tc{"day before the window", Lifecycle{Status: "issued", ValidFrom: from, ValidTill: till, PlanTill: day(plan)}, want})
			from, till = cert(life.days, -1) // expired, the plan goes on: overdue
			cases = append(cases, tc{"expired in the plan", Lifecycle{Status: "issued", ValidFrom: from, ValidTill: till, PlanTill: day(plan)},
				NextStep{Step: StepReissue, Due: till}})
		}
	}
	from, till := cert(199, 20)
	cases = append(cases,
		// The plan.
		tc{"plan ends in 90 days", Lifecycle{Status: "issued", ValidFrom: day(-100), ValidTill: day(99), PlanTill: day(90)},
			NextStep{Step: StepRenew, Due: day(90)}},
		tc{"plan ends in 91 days", Lifecycle{Status: "issued", ValidFrom: day(-100), ValidTill: day(91), PlanTill: day(91)},
			NextStep{Step: StepNone}},
		tc{"plan ended", Lifecycle{Status: "issued", ValidFrom: day(-400), ValidTill: day(-2), PlanTill: day(-2)},
			NextStep{Step: StepRenew, Due: day(-2)}},
		tc{"certificate due, plan ends with it", Lifecycle{Status: "issued", ValidFrom: from, ValidTill: till, PlanTill: till},
			NextStep{Step: StepRenew, Due: till}},
		tc{"certificate due before a plan that ends soon", Lifecycle{Status: "issued", ValidFrom: from, ValidTill: till, PlanTill: day(60)},
			NextStep{Step: StepReissue, Due: till}},
		// A 1-year certificate of the old kind: a 30-day window.
		tc{"397-day certificate", Lifecycle{Status: "issued", ValidFrom: day(-367), ValidTill: day(30), PlanTill: day(700)},
			NextStep{Step: StepReissue, Due: day(30)}},
		// Renewals.
		tc{"renewal issued", Lifecycle{Status: "issued", ValidFrom: from, ValidTill: till, PlanTill: till, RenewedBy: 7, Renewal: RenewalIssued},
			NextStep{Step: StepRenewed, Renewal: 7}},
		tc{"renewal pending, certificate due", Lifecycle{Status: "issued", ValidFrom: from, ValidTill: till, PlanTill: till, RenewedBy: 7, Renewal: RenewalPending},
			NextStep{Step: StepIssueRenewal, Due: till, Renewal: 7}},
		tc{"renewal pending, certificate not due", Lifecycle{Status: "issued", ValidFrom: day(-10), ValidTill: day(189), PlanTill: day(80), RenewedBy: 7, Renewal: RenewalPending},
			NextStep{Step: StepNone, Renewal: 7}},
		tc{"renewal canceled: none", Lifecycle{Status: "issued", ValidFrom: day(-10), ValidTill: day(60), PlanTill: day(60), RenewedBy: 7, Renewal: RenewalNone},
			NextStep{Step: StepRenew, Due: day(60)}},
		// Orders without dates: said, not guessed.
		tc{"pending", Lifecycle{Status: "pending", PlanTill: day(365)}, NextStep{Step: StepNone, Missing: "certificate.valid_till"}},
		tc{"pending, plan ending", Lifecycle{Status: "pending", PlanTill: day(30)}, NextStep{Step: StepRenew, Due: day(30)}},
		tc{"pending without a plan", Lifecycle{Status: "pending"}, NextStep{Step: StepNone, Missing: "certificate.valid_till"}},
		tc{"no plan end, certificate due", Lifecycle{Status: "issued", ValidFrom: from, ValidTill: till},
			NextStep{Step: StepNone, Due: till, Missing: "order_valid_till"}},
		tc{"no plan end, certificate not due", Lifecycle{Status: "issued", ValidFrom: day(-10), ValidTill: day(189)},
			NextStep{Step: StepNone, Missing: "order_valid_till"}},
		tc{"no valid_from: the longest window", Lifecycle{Status: "issued", ValidTill: day(30), PlanTill: day(400)},
			NextStep{Step: StepReissue, Due: day(30)}},
		// Ended.
		tc{"canceled", Lifecycle{Status: "Canceled", PlanTill: day(10)}, NextStep{Step: StepEnded}},
		tc{"cancelled", Lifecycle{Status: "cancelled"}, NextStep{Step: StepEnded}},
		tc{"rejected", Lifecycle{Status: "rejected"}, NextStep{Step: StepEnded}},
		tc{"revoked", Lifecycle{Status: "revoked", ValidFrom: from, ValidTill: till, PlanTill: day(300)}, NextStep{Step: StepEnded}},
	)
	for _, c := range cases {
		if got := w.Next(c.l, now); got != c.want {
			t.Errorf("%s: Next(%+v) = %+v, want %+v", c.name, c.l, got, c.want)
		}
	}
}

func TestReissueWindow(t *testing.T) {
	w := Windows{Reissue: 30, Renewal: 90}
	for _, c := range []struct {
		from, till string
		want       int
	}{
		{"2026-03-01", "2026-09-16", 30}, // 199 days
		{"2027-03-15", "2027-06-23", 30}, // 100 days: 33
		{"2029-03-15", "2029-05-01", 15}, // 47 days
		{"2029-03-15", "2029-03-16", 0},  // 1 day
		{"", "2029-05-01", 30},
		{"2029-05-01", "2029-03-15", 30}, // nonsense: the longest
	} {
		if got := w.ReissueWindow(c.from, c.till); got != c.want {
			t.Errorf("ReissueWindow(%s, %s) = %d, want %d", c.from, c.till, got, c.want)
		}
	}
	now := time.Date(2029, 4, 1, 0, 0, 0, 0, time.UTC)
	if n := (NextStep{Step: StepReissue, Due: "2029-03-31"}); !n.Overdue(now) {
		t.Error("a step due yesterday is not overdue")
	}
	if n := (NextStep{Step: StepReissue, Due: "2029-04-01"}); n.Overdue(now) {
		t.Error("a step due today is overdue")
	}
}
