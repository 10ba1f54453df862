package web

import (
	"net/http"
	"strconv"
	"time"

	"github.com/certorder/certorder"
)

// The timeline: the member's current orders (those whose renewal is issued
// left out) over the next 13 months, soonest certificate end first, 50 to
// a page and grouped by the month the certificate ends in, so that
// hundreds of orders stay readable. Each order is a row: its words in HTML
// (they wrap on a phone: both ends and the next step), its bar an inline
// SVG stretched to the row's width from today to the certificate's end,
// the reissue window shaded and the plan's end marked, coloured by classes
// of style.css (the CSP allows no inline style).
const (
	timelineMonths = 13
	timelineWidth  = 1000.0 // the bars' SVG user units across the 13 months
	timelinePage   = 50
)

// timelineScale places dates on the timeline. Every month is the same
// width, so that the month labels (an HTML grid of 13 equal columns) line
// up with the bars' month lines without positioning by inline style.
type timelineScale struct {
	start time.Time // the first day of today's month, UTC
}

// x is the position of day t, clamped to the timeline.
func (sc timelineScale) x(t time.Time) float64 {
	months := (t.Year()-sc.start.Year())*12 + int(t.Month()) - int(sc.start.Month())
	daysIn := time.Date(t.Year(), t.Month()+1, 0, 0, 0, 0, 0, time.UTC).Day()
	pos := (float64(months) + float64(t.Day()-1)/float64(daysIn)) / timelineMonths * timelineWidth
	return min(max(pos, 0), timelineWidth)
}

// bar is one order on the timeline.
type bar struct {
	ID         int64
	CommonName string
	ValidTill  string // YYYY-MM-DD, the certificate's end
	PlanTill   string // YYYY-MM-DD, the plan's end
	Expiry     Expiry
	ExpiryText string
	Next       step
	Beyond     bool // ends after the timeline's last month
	HasBar     bool
	X, W       string // the bar, from today to the order's end
	HasWindow  bool
	WX, WW     string // the part of the bar in the reissue window
	HasPlanEnd bool
	PX         string // the plan's end, when on the timeline
}

type barGroup struct {
	Heading string
	Bars    []bar
}

type monthLabel struct {
	Month, Year string // Year only on the first column and on January
}

type timelineData struct {
	Query            string
	Groups           []barGroup
	Months           []monthLabel
	Grid             []string // x of each month's first day but the first
	Today            string   // x of today
	TodayText        string
	Total            int
	Page, Pages      int
	PrevURL, NextURL string
}

func svgNum(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) }

func (h *handler) timeline(w http.ResponseWriter, r *http.Request, s *certorder.Session) {
	cat := h.cat(r)
	now := h.cfg.Now().UTC()
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	sc := timelineScale{start: time.Date(today.Year(), today.Month(), 1, 0, 0, 0, 0, time.UTC)}
	end := sc.start.AddDate(0, timelineMonths, 0)

	f, oq := readFilter(r, s.MemberID)
	oq.HideRenewed, oq.Sort = true, certorder.SortByExpiry
	data := timelineData{Query: f.Query, Today: svgNum(sc.x(today)), TodayText: today.Format(cat.S("format.date"))}
	for i := range timelineMonths {
		m := sc.start.AddDate(0, i, 0)
		label := monthLabel{Month: cat.S("month." + strconv.Itoa(int(m.Month())))}
		if i == 0 || m.Month() == time.January {
			label.Year = cat.S("format.year", m.Year())
		}
		data.Months = append(data.Months, label)
		if i > 0 {
			data.Grid = append(data.Grid, svgNum(sc.x(m)))
		}
	}
	var err error
	if data.Total, err = h.store.CountOrders(r.Context(), oq); err != nil {
		h.serverError(w, r, err)
		return
	}
	data.Pages = max(1, (data.Total+timelinePage-1)/timelinePage)
	data.Page = min(max(f.Page, 1), data.Pages)
	oq.Offset, oq.Limit = (data.Page-1)*timelinePage, timelinePage
	orders, err := h.store.ListOrders(r.Context(), oq)
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	for _, o := range orders {
		b := bar{ID: o.ID, CommonName: o.Certificate.CommonName, ValidTill: o.Certificate.ValidTill, PlanTill: o.PlanTill,
			Next: h.stepOf(cat, o, now)}
		var days int
		b.Expiry, days = h.expiryOf(o, now)
		b.ExpiryText = expiryText(cat, b.Expiry, days)
		heading := cat.S("timeline.group.expired")
		if o.Certificate.ValidTill == "" {
			heading = cat.S("timeline.group.pending")
		} else if till, err := time.Parse(certorder.DateLayout, o.Certificate.ValidTill); err == nil && !till.Before(today) {
			x1, x2 := sc.x(today), sc.x(till.AddDate(0, 0, 1)) // to the end of its last day
			b.HasBar, b.X, b.W = true, svgNum(x1), svgNum(max(x2-x1, 2))
			window := h.cfg.Windows.ReissueWindow(o.Certificate.ValidFrom, o.Certificate.ValidTill)
			wx1 := max(sc.x(till.AddDate(0, 0, -window)), x1)
			if wx1 < x2 {
				b.HasWindow, b.WX, b.WW = true, svgNum(wx1), svgNum(x2-wx1)
			}
			b.Beyond = !till.Before(end)
			heading = cat.S("timeline.group.month", cat.Month(till))
			if b.Beyond {
				heading = cat.S("timeline.group.later", cat.Month(end.AddDate(0, -1, 0)))
			}
		}
		if plan, err := time.Parse(certorder.DateLayout, o.PlanTill); err == nil && !plan.Before(today) && plan.Before(end) {
			b.HasPlanEnd, b.PX = true, svgNum(sc.x(plan.AddDate(0, 0, 1)))
		}
		if n := len(data.Groups); n == 0 || data.Groups[n-1].Heading != heading {
			data.Groups = append(data.Groups, barGroup{Heading: heading})
		}
		g := &data.Groups[len(data.Groups)-1]
		g.Bars = append(g.Bars, b)
	}
	pageURL := func(p int) string {
		v := f.values(p)
		v.Del("sort")
		v.Del("renewed")
		return "/timeline?" + v.Encode()
	}
	if data.Page > 1 {
		data.PrevURL = pageURL(data.Page - 1)
	}
	if data.Page < data.Pages {
		data.NextURL = pageURL(data.Page + 1)
	}
	h.render(w, r, http.StatusOK, "timeline", signedIn(view{Title: cat.S("timeline.title"), Section: "timeline", Data: data}, s))
}
