//lint:file-ignore ST1005 these errors are the simulator's answers to clients, whole sentences as DigiCert writes its messages.

package digicerttest

import (
	"cmp"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/certorder/certorder/digicert"
)

// The handlers run with s.mu held (ServeHTTP holds it).

// mountain is the zone DigiCert documents for date range filters ("MDT").
var mountain = time.FixedZone("MDT", -6*3600)

// listOrders serves List orders: filters, sort, offset and limit, and the
// page object.
func (s *Server) listOrders(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	offset, limit, ok := paging(w, q, digicert.MaxLimit)
	if !ok {
		return
	}
	var keep []func(*order) bool
	for name, values := range q {
		prop, isFilter := filterName(name)
		if !isFilter {
			continue
		}
		f, err := s.filter(prop, values[0])
		if err != nil {
			writeError(w, http.StatusBadRequest, "invalid_filter|"+prop, err.Error())
			return
		}
		keep = append(keep, f)
	}
	var matched []*order
	for _, id := range s.ids {
		o := s.orders[id]
		if !slices.ContainsFunc(keep, func(f func(*order) bool) bool { return !f(o) }) {
			matched = append(matched, o)
		}
	}
	if sort := q.Get("sort"); sort != "" && sort != "id" { // s.ids is in id order already
		less, err := sorter(sort)
		if err != nil {
			writeError(w, http.StatusBadRequest, "invalid_sort", err.Error())
			return
		}
		slices.SortStableFunc(matched, less)
	}
	page := struct {
		Orders []listItemJSON `json:"orders"`
		Page   struct {
			Total  int `json:"total"`
			Limit  int `json:"limit"`
			Offset int `json:"offset"`
		} `json:"page"`
	}{Orders: []listItemJSON{}}
	page.Page.Total, page.Page.Limit, page.Page.Offset = len(matched), limit, offset
	for i := offset; i < len(matched) && i < offset+limit; i++ {
		page.Orders = append(page.Orders, s.listItem(matched[i]))
	}
	writeJSON(w, http.StatusOK, page)
}

// paging reads offset and limit; a limit over max is cut to max. A limit
// of 0 (absent) means max.
func paging(w http.ResponseWriter, q url.Values, maxLimit int) (offset, limit int, ok bool) {
	offset, limit = 0, maxLimit
	if v := q.Get("offset"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			writeError(w, http.StatusBadRequest, "invalid_offset", "offset must be a non-negative integer.")
			return 0, 0, false
		}
		offset = n
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			writeError(w, http.StatusBadRequest, "invalid_limit", "limit must be a positive integer.")
			return 0, 0, false
		}
		limit = min(n, maxLimit)
	}
	return offset, limit, true
}

func filterName(param string) (string, bool) {
	inner, ok := strings.CutPrefix(param, "filters[")
	if !ok || !strings.HasSuffix(inner, "]") {
		return "", false
	}
	return strings.TrimSuffix(inner, "]"), true
}

// filter is a List orders filter. Filters DigiCert has but the simulator
// does not are refused, so a test never passes on a filter ignored.
func (s *Server) filter(prop, value string) (func(*order) bool, error) {
	switch prop {
	case "id", "container_id":
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("filters[%s] must be an integer.", prop)
		}
		if prop == "id" {
			return func(o *order) bool { return o.id == n }, nil
		}
		return func(o *order) bool { return o.containerID == n }, nil
	case "status":
		return func(o *order) bool { return o.status == value }, nil
	case "common_name":
		return func(o *order) bool { return o.commonName == value }, nil
	case "is_renewed":
		switch value {
		case "1":
			return func(o *order) bool { return o.renewedBy != 0 }, nil
		case "0":
			return func(o *order) bool { return o.renewedBy == 0 }, nil
		}
		return nil, fmt.Errorf("filters[is_renewed] must be 1 or 0.")
	case "date_created":
		from, to, err := dateRange(value)
		if err != nil {
			return nil, err
		}
		return func(o *order) bool { return !o.created.Before(from) && !o.created.After(to) }, nil
	}
	return nil, fmt.Errorf("the simulator does not support filters[%s].", prop)
}

func sorter(sort string) (func(a, b *order) int, error) {
	desc := strings.HasPrefix(sort, "-")
	var less func(a, b *order) int
	switch strings.TrimPrefix(sort, "-") {
	case "id":
		less = func(a, b *order) int { return cmp.Compare(a.id, b.id) }
	case "date_created":
		less = func(a, b *order) int { return a.created.Compare(b.created) }
	default:
		return nil, fmt.Errorf("the simulator sorts by id or date_created, not %q.", sort)
	}
	if desc {
		return func(a, b *order) int { return less(b, a) }, nil
	}
	return less, nil
}

// dateRange reads "start...end" (or one date) in the documented formats,
// yyyy-MM-dd or yyyy-MM-dd HH:mm:ss, Mountain time. A date alone as the end
// means the end of that day.
func dateRange(v string) (time.Time, time.Time, error) {
	startText, endText, isRange := strings.Cut(v, "...")
	if !isRange {
		endText = startText
	}
	start, _, err := parseFilterTime(startText)
	if err != nil {
		return time.Time{}, time.Time{}, err
	}
	end, dayOnly, err := parseFilterTime(endText)
	if err != nil {
		return time.Time{}, time.Time{}, err
	}
	if dayOnly {
		end = end.Add(24*time.Hour - time.Second)
	}
	if end.Before(start) {
		return time.Time{}, time.Time{}, fmt.Errorf("the range %q ends before it starts.", v)
	}
	return start, end, nil
}

func parseFilterTime(text string) (time.Time, bool, error) {
	if t, err := time.ParseInLocation(time.DateOnly, text, mountain); err == nil {
		return t, true, nil
	}
	t, err := time.ParseInLocation("2006-01-02 15:04:05", text, mountain)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("%q is not yyyy-MM-dd or yyyy-MM-dd HH:mm:ss.", text)
	}
	return t, false, nil
}

// orderInfo serves Order info, by order ID or by the thumbprint or serial
// number of the order's certificate.
func (s *Server) orderInfo(w http.ResponseWriter, r *http.Request) {
	key := r.PathValue("id")
	id, err := strconv.ParseInt(key, 10, 64)
	if err != nil {
		id = s.byCertKey[strings.ToLower(key)]
	}
	o, ok := s.orders[id]
	if !ok {
		writeError(w, http.StatusNotFound, "not_found|order", "The specified order was not found.")
		return
	}
	writeJSON(w, http.StatusOK, s.info(o))
}

// maxWindow is the documented cap of a status change time frame.
const maxWindow = digicert.MaxStatusWindow

// statusChanges serves the Status change list: minutes and seconds back
// from now, or filters[status_last_updated]; a time frame over 7 days is
// refused with time_frame_too_long. The documented answer has no page
// object; offset and limit are honoured when given.
func (s *Server) statusChanges(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	now := s.now()
	var start, end time.Time
	rangeText := q.Get("filters[status_last_updated]")
	_, hasMin := q["minutes"]
	_, hasSec := q["seconds"]
	switch {
	case rangeText != "" && (hasMin || hasSec):
		writeError(w, http.StatusBadRequest, "invalid_time_frame", "Use minutes and seconds, or filters[status_last_updated], not both.")
		return
	case rangeText != "":
		var err error
		start, end, err = dateRange(rangeText)
		if err != nil {
			writeError(w, http.StatusBadRequest, "invalid_filter|status_last_updated", err.Error())
			return
		}
	case hasMin || hasSec:
		var total int64
		for name, unit := range map[string]int64{"minutes": 60, "seconds": 1} {
			if v := q.Get(name); v != "" {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil || n < 0 || n > int64(maxWindow/time.Second) {
					writeError(w, http.StatusBadRequest, "time_frame_too_long", "The time frame cannot exceed 7 days (10080 minutes, or 604800 seconds).")
					return
				}
				total += n * unit
			}
		}
		start, end = now.Add(-time.Duration(total)*time.Second), now
	default:
		writeError(w, http.StatusBadRequest, "missing_time_frame", "Give minutes, seconds or filters[status_last_updated].")
		return
	}
	if end.Sub(start) > maxWindow {
		writeError(w, http.StatusBadRequest, "time_frame_too_long", "The time frame cannot exceed 7 days (10080 minutes, or 604800 seconds).")
		return
	}
	type change struct {
		OrderID       int64  `json:"order_id"`
		CertificateID int64  `json:"certificate_id"`
		Status        string `json:"status"`
	}
	var changes []change
	for i := len(s.ids) - 1; i >= 0; i-- { // newest order first, as in the example
		o := s.orders[s.ids[i]]
		// The last change in the frame: a later change leaves the order out,
		// as documented for status_last_updated; for minutes and seconds the
		// frame ends now, so there is no later change.
		if !o.statusChanged.IsZero() && !o.statusChanged.Before(start) && !o.statusChanged.After(end) {
			changes = append(changes, change{o.id, o.certID, o.status})
		}
	}
	offset, limit, ok := paging(w, q, len(changes))
	if !ok {
		return
	}
	out := struct {
		Orders []change `json:"orders"`
	}{Orders: []change{}}
	if offset < len(changes) {
		out.Orders = changes[offset:min(len(changes), offset+limit)]
	}
	writeJSON(w, http.StatusOK, out)
}
