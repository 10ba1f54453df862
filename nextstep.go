package certorder

import "time"

// Step names what must happen next to an order: the one rule (Windows.Next)
// that the member page, the CLI, the events, the metrics and the alerts all
// read.
type Step string

// The steps.
const (
	// StepReissue: the certificate ends within the reissue window and the
	// plan covers beyond it: the member's ACME client reissues on the same
	// order number; nothing to buy.
	StepReissue Step = "reissue"
	// StepRenew: the plan ends within the renewal window and no renewal
	// exists: the contract must be renewed (a new order number).
	StepRenew Step = "renew"
	// StepIssueRenewal: a renewal exists but is not issued yet, and this
	// order's certificate ends within the reissue window: the member's ACME
	// client must get the renewal issued before that date.
	StepIssueRenewal Step = "issue_renewal"
	// StepRenewed: an issued renewal exists: follow it.
	StepRenewed Step = "renewed"
	// StepEnded: canceled, rejected or revoked: nothing more will happen.
	StepEnded Step = "ended"
	// StepNone: nothing is due.
	StepNone Step = "none"
)

// Steps are every step, in a stable order (the metric's series).
var Steps = []Step{StepReissue, StepRenew, StepIssueRenewal, StepRenewed, StepEnded, StepNone}

// Windows are how long before an end the step becomes due, in days.
type Windows struct {
	// Reissue is the longest reissue window; a certificate's own is the
	// shorter of it and a third of its lifetime, so that a 47-day
	// certificate is not "due" for most of its life.
	Reissue int
	// Renewal is the renewal window before the plan's end.
	Renewal int
}

// DefaultWindows are the windows serve and the commands use unless told
// otherwise: 30 days (certbot's default renewal point) and 90 days (the
// first of CertCentral's renewal notices, send_minus_90).
var DefaultWindows = Windows{Reissue: 30, Renewal: 90}

// Lifecycle is what the next step of an order depends on.
type Lifecycle struct {
	Status    string // the order's
	ValidFrom string // the current certificate's, YYYY-MM-DD; "" when not stated
	ValidTill string // the current certificate's, YYYY-MM-DD; "" until issued
	PlanTill  string // order_valid_till, the plan's end; "" when not stated
	RenewedBy int64  // the renewal, 0 if none
	Renewal   RenewalState
}

// RenewalState is how far an order's renewal has come.
type RenewalState int

// The renewal states.
const (
	RenewalNone    RenewalState = iota // no renewal, or one that was canceled or rejected
	RenewalPending                     // a renewal not issued yet
	RenewalIssued                      // a renewal with its certificate
)

// RenewalStateOf is the state of an order renewed by renewedBy, whose
// renewal has status and validTill ("" both when it is not stored).
func RenewalStateOf(renewedBy int64, status, validTill string) RenewalState {
	switch {
	case renewedBy == 0 || OrderEnded(status):
		return RenewalNone
	case validTill != "":
		return RenewalIssued
	}
	return RenewalPending
}

// NextStep is what Windows.Next says of an order.
type NextStep struct {
	Step Step
	// Due is the date the step is due by, YYYY-MM-DD: the certificate's end
	// for reissue and issue_renewal, the plan's end for renew; for none, the
	// certificate's end when it is within its window but the plan's end is
	// not stated (a reissue or a renewal: the rule cannot tell); "" otherwise.
	// A date in the past is a step overdue.
	Due string
	// Renewal is the order to follow (renewed) or to get issued (issue_renewal).
	Renewal int64
	// Missing names the date the rule needed and the order does not state
	// ("certificate.valid_till" for an order not issued yet,
	// "order_valid_till"): the step is the best it can say without guessing.
	Missing string
}

// Overdue reports whether the step's date has passed at now.
func (n NextStep) Overdue(now time.Time) bool {
	return n.Due != "" && DaysRemaining(n.Due, now) < 0
}

// ReissueWindow is the reissue window of a certificate valid from validFrom
// to validTill, in days: the shorter of w.Reissue and a third of its
// lifetime (w.Reissue when validFrom is not stated).
func (w Windows) ReissueWindow(validFrom, validTill string) int {
	if validFrom == "" || validTill == "" {
		return w.Reissue
	}
	lifetime := DaysRemaining(validTill, dateTime(validFrom))
	if lifetime <= 0 {
		return w.Reissue
	}
	return min(w.Reissue, lifetime/3)
}

// dateTime is the start of the day of a YYYY-MM-DD date, UTC; the zero
// time if it does not parse.
func dateTime(date string) time.Time {
	if y, m, d, ok := plainDate(date); ok {
		return time.Date(y, time.Month(m), d, 0, 0, 0, 0, time.UTC)
	}
	t, _ := time.Parse(DateLayout, date)
	return t
}

// Next is the next step of an order at now (its date, UTC). In order:
// ended; renewed; a renewal pending (issue_renewal once the certificate is
// within its reissue window); reissue when the certificate is within its
// window and the plan covers beyond it; renew when the plan ends within the
// renewal window (or the certificate's window reaches the plan's end);
// else none. Ends are counted in whole days, inclusive: a certificate 30
// days from its end with a 30-day window is due.
func (w Windows) Next(l Lifecycle, now time.Time) NextStep {
	switch {
	case OrderEnded(l.Status) || NormalStatus(l.Status) == StatusRevoked:
		return NextStep{Step: StepEnded}
	case l.Renewal == RenewalIssued:
		return NextStep{Step: StepRenewed, Renewal: l.RenewedBy}
	}
	certDue := l.ValidTill != "" && DaysRemaining(l.ValidTill, now) <= w.ReissueWindow(l.ValidFrom, l.ValidTill)
	if l.Renewal == RenewalPending {
		if certDue {
			return NextStep{Step: StepIssueRenewal, Due: l.ValidTill, Renewal: l.RenewedBy}
		}
		return NextStep{Step: StepNone, Renewal: l.RenewedBy, Missing: missing(l.ValidTill == "", "certificate.valid_till")}
	}
	switch {
	case l.PlanTill == "" && l.ValidTill == "":
		return NextStep{Step: StepNone, Missing: "certificate.valid_till"}
	case l.PlanTill == "":
		// Without the plan's end a certificate due cannot be told a
		// reissue from a renewal: say so (with the certificate's end as
		// the date) rather than guess.
		n := NextStep{Step: StepNone, Missing: "order_valid_till"}
		if certDue {
			n.Due = l.ValidTill
		}
		return n
	case certDue && l.PlanTill > l.ValidTill:
		return NextStep{Step: StepReissue, Due: l.ValidTill}
	case certDue || DaysRemaining(l.PlanTill, now) <= w.Renewal:
		return NextStep{Step: StepRenew, Due: l.PlanTill}
	}
	return NextStep{Step: StepNone, Missing: missing(l.ValidTill == "", "certificate.valid_till")}
}

func missing(absent bool, what string) string {
	if absent {
		return what
	}
	return ""
}
