package digicert

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strconv"
	"time"
)

// MaxStatusWindow is the longest time frame one call of the Order status
// change list may cover: 7 days (10080 minutes, 604800 seconds).
const MaxStatusWindow = 7 * 24 * time.Hour

// DigiCert reads the dates of filters[status_last_updated] in Mountain
// time, "MDT" on the page. We render a range's start as if the zone were
// UTC-7 and its end as if it were UTC-6: whichever of MST and MDT DigiCert
// means, the range it reads covers ours, at most an hour wider at one end.
var (
	rangeStartZone = time.FixedZone("UTC-7", -7*3600)
	rangeEndZone   = time.FixedZone("UTC-6", -6*3600)
)

// rangeChunk is the longest range StatusChanges asks for in one call: the
// 7-day maximum less room for the hour the rendering may add at each end.
const rangeChunk = MaxStatusWindow - 2*time.Hour

// statusPageSize is the limit asked of each status change list page.
const statusPageSize = 1000

// StatusChange is an order whose status changed in the asked time frame,
// with its current status.
type StatusChange struct {
	OrderID       int64  `json:"order_id"`
	CertificateID int64  `json:"certificate_id"`
	Status        string `json:"status"`
}

// DateRange renders from..to as a date range filter value
// ("yyyy-MM-dd HH:mm:ss...yyyy-MM-dd HH:mm:ss", in DigiCert's Mountain time,
// widened as for StatusChanges), for filters such as date_created.
func DateRange(from, to time.Time) string {
	start := from.In(rangeStartZone).Truncate(time.Second)
	end := to.In(rangeEndZone)
	if t := end.Truncate(time.Second); !t.Equal(end) {
		end = t.Add(time.Second)
	}
	const layout = "2006-01-02 15:04:05"
	return start.Format(layout) + "..." + end.Format(layout)
}

// StatusChangesSince lists the orders whose status changed between since
// and now (GET order/certificate/status-changes, "Status change list"
// page). The last 7 days are asked with the seconds parameter, relative to
// DigiCert's now; anything older with filters[status_last_updated] ranges
// of under 7 days each. The window is widened by the clock skew (2
// minutes), so consecutive syncs overlap rather than leave a gap.
// An order appears once, with its latest status.
func (c *Client) StatusChangesSince(ctx context.Context, since time.Time) ([]StatusChange, error) {
	now := c.now()
	window := now.Sub(since) + c.skew
	var older []StatusChange
	if window > MaxStatusWindow {
		// DigiCert's seconds window is [its now - 7 days, its now]; its now is
		// within skew of ours, so the ranges must reach now + skew - 7 days.
		var err error
		older, err = c.StatusChanges(ctx, since, now.Add(c.skew-MaxStatusWindow))
		if err != nil {
			return nil, err
		}
		window = MaxStatusWindow
	}
	seconds := int64(math.Ceil(max(window, time.Second).Seconds()))
	q := url.Values{"seconds": {strconv.FormatInt(seconds, 10)}}
	recent, err := c.statusPages(ctx, fmt.Sprintf("status changes (last %ds)", seconds), q)
	if err != nil {
		return nil, err
	}
	return mergeChanges(older, recent), nil
}

// StatusChanges lists the orders whose last status change falls between
// from and to, with filters[status_last_updated]; a span over 7 days is
// split into several calls. As DigiCert documents, an order whose status
// changed again after to is not listed; StatusChangesSince has no such gap.
func (c *Client) StatusChanges(ctx context.Context, from, to time.Time) ([]StatusChange, error) {
	if !to.After(from) {
		return nil, fmt.Errorf("digicert: status changes: the end %v is not after the start %v", to, from)
	}
	var all []StatusChange
	for start := from; start.Before(to); {
		end := start.Add(rangeChunk)
		if end.After(to) {
			end = to
		}
		r := DateRange(start, end)
		got, err := c.statusPages(ctx, "status changes ("+r+")", url.Values{"filters[status_last_updated]": {r}})
		if err != nil {
			return nil, err
		}
		all = mergeChanges(all, got)
		if len(all) > c.maxChanges {
			return nil, fmt.Errorf("digicert: status changes: %w: more than %d status changes; stopped reading", ErrTooLarge, c.maxChanges)
		}
		start = end
	}
	return all, nil
}

// statusPages asks one time frame page by page. The documented answer has
// no page object, so paging stops at a page shorter than the limit, or one
// that brings no order not seen yet (a server that ignores offset).
func (c *Client) statusPages(ctx context.Context, op string, q url.Values) ([]StatusChange, error) {
	seen := map[int64]bool{}
	var all []StatusChange
	q.Set("limit", strconv.Itoa(statusPageSize))
	for offset := 0; ; offset += statusPageSize {
		if len(all) >= c.maxChanges {
			return nil, fmt.Errorf("digicert: %s: %w: more than %d status changes, page after page; stopped reading",
				op, ErrTooLarge, c.maxChanges)
		}
		q.Set("offset", strconv.Itoa(offset))
		var page struct {
			Orders []StatusChange `json:"orders"`
		}
		if err := c.get(ctx, op, "order/certificate/status-changes", q, &page); err != nil {
			return nil, err
		}
		if len(page.Orders) > statusPageSize {
			return nil, fmt.Errorf("digicert: %s: %w: a page of %d entries, over the %d asked", op, ErrTooLarge, len(page.Orders), statusPageSize)
		}
		fresh := 0
		for _, ch := range page.Orders {
			if !seen[ch.OrderID] {
				seen[ch.OrderID] = true
				fresh++
			}
		}
		all = append(all, page.Orders...)
		if len(page.Orders) < statusPageSize || fresh == 0 {
			return mergeChanges(nil, all), nil
		}
	}
}

// mergeChanges joins two lists, later entries winning for the same order,
// sorted by order ID.
func mergeChanges(earlier, later []StatusChange) []StatusChange {
	byID := make(map[int64]StatusChange, len(earlier)+len(later))
	for _, ch := range earlier {
		byID[ch.OrderID] = ch
	}
	for _, ch := range later {
		byID[ch.OrderID] = ch
	}
	out := make([]StatusChange, 0, len(byID))
	for _, ch := range byID {
		out = append(out, ch)
	}
	slices.SortFunc(out, func(a, b StatusChange) int { return cmp.Compare(a.OrderID, b.OrderID) })
	return out
}
