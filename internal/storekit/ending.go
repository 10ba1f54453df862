package storekit

import (
	"strconv"
	"strings"

	"github.com/certorder/certorder"
)

// The webhook worker's ends: the orders whose certificate or plan ends
// soon, and the thresholds told already.

// EndingOrder is an order whose certificate or plan ends within a window,
// of a member with an endpoint for the event that end makes
// (certorder.EventOrderExpiring, certorder.EventOrderPlanEnding), with the thresholds (days)
// told already for that end. Its certorder.Order has no Doc.
type EndingOrder struct {
	certorder.Order
	Notified []int
}

// End is the date the event of type typ counts to: the certificate's end
// for order.expiring, the plan's for order.plan_ending.
func (o *EndingOrder) End(typ string) string {
	if typ == certorder.EventOrderPlanEnding {
		return o.PlanTill
	}
	return o.Certificate.ValidTill
}

// ParseThresholds reads a comma-separated list of days ("30,7,1"), as the
// stores keep the thresholds told and serve takes them; what does not
// parse as a positive number is left out.
func ParseThresholds(s string) []int {
	var ts []int
	for _, f := range strings.Split(s, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n > 0 {
			ts = append(ts, n)
		}
	}
	return ts
}
