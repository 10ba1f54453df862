package web

import (
	"context"
	"encoding/csv"
	"net/http"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/certorder/certorder"
)

// csvBatch is how many orders the CSV export reads at a time: it streams,
// never holding a member's orders at once.
const csvBatch = 500

// ordersCSV downloads the orders list with its current filter and sort
// (every page of it), for the member's spreadsheet. The next step is given
// three ways: its name (certorder.Step: reissue, renew, ...) to filter on,
// its date to sort on, and in words to read.
func (h *handler) ordersCSV(w http.ResponseWriter, r *http.Request, s *certorder.Session) {
	cat := h.cat(r)
	_, oq := readFilter(r, s.MemberID)
	oq.Limit = csvBatch
	// The page's timeout bounds each batch, not the whole download.
	batch := func(q certorder.OrderQuery) ([]*certorder.Order, error) {
		ctx, cancel := context.WithTimeout(r.Context(), h.cfg.StoreTimeout)
		defer cancel()
		return h.store.ListOrders(ctx, q)
	}
	orders, err := batch(oq) // the first batch before any byte: a failure is still a proper error page
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="orders.csv"`)
	// A byte order mark, so that a spreadsheet reads the UTF-8 (Japanese
	// names) as UTF-8 rather than the system's code page.
	w.Write([]byte("\uFEFF"))
	cw := csv.NewWriter(w)
	cw.Write([]string{cat.S("col.order"), cat.S("col.common_name"), cat.S("col.product"), cat.S("col.status"),
		cat.S("col.valid_till"), cat.S("col.days_remaining"), cat.S("col.expiry"), cat.S("col.renewed_by"), cat.S("col.renews"),
		cat.S("col.plan_ends"), cat.S("col.next_step"), cat.S("col.next_step_due"), cat.S("col.next_step_text")})
	for {
		for _, o := range orders {
			rw, err := h.makeRow(cat, o)
			if err != nil {
				h.cfg.Logger.Error("web: CSV export", "err", err)
				return // the download ends short; the client sees a truncated file
			}
			days := ""
			if rw.Expiry != Renewed && rw.ValidTill != "" {
				days = strconv.Itoa(rw.Days)
			}
			cw.Write(csvRow(strconv.FormatInt(rw.ID, 10), rw.CommonName, rw.Product, rw.Status, rw.ValidTill, days,
				rw.ExpiryText, idOrEmpty(rw.RenewedBy), idOrEmpty(rw.Renews), rw.PlanTill, string(rw.Next.Step), rw.Next.Due, rw.Next.Text))
		}
		cw.Flush()
		if len(orders) < csvBatch || cw.Error() != nil {
			break
		}
		if oq.Sort == certorder.SortByID {
			oq.AfterID = orders[len(orders)-1].ID // keyset paging: every batch costs the same
		} else {
			oq.Offset += csvBatch
		}
		if orders, err = batch(oq); err != nil {
			h.cfg.Logger.Error("web: CSV export", "err", err)
			return
		}
	}
	if err := cw.Error(); err != nil {
		h.cfg.Logger.Warn("web: CSV export", "err", err)
	}
}

func idOrEmpty(id int64) string {
	if id == 0 {
		return ""
	}
	return strconv.FormatInt(id, 10)
}

// csvRow makes cells safe for a spreadsheet: a cell a spreadsheet would
// read as a formula gets a leading apostrophe. Spreadsheets skip leading
// white space (spaces, tabs, line breaks, the ideographic space) and may
// drop invisible characters (a zero-width space, a byte order mark, a
// control character such as U+001C), and, in East Asian locales, read the
// full-width ＝ ＋ － ＠ (and the small ﹦ ﹢ ﹣) as their ASCII forms; so a
// cell is guarded when its first character that is neither white space nor
// invisible is one of those or = + - @, or when it starts with a tab or
// carriage return. Integers are left alone: -5 days is a number, not a
// formula.
func csvRow(cells ...string) []string {
	for i, c := range cells {
		cells[i] = csvCell(c)
	}
	return cells
}

// formulaStarts are the characters a formula starts with.
const formulaStarts = "=+-@＝＋－＠﹦﹢﹣"

// CSVCell is a cell as every CSV the service writes has it: one a
// spreadsheet would run as a formula gets a leading ' (the orders page's
// download; admin order find).
func CSVCell(c string) string { return csvCell(c) }

func csvCell(c string) string {
	trimmed := strings.TrimLeftFunc(c, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsGraphic(r) })
	first, _ := utf8.DecodeRuneInString(trimmed)
	if trimmed == "" || !strings.ContainsRune(formulaStarts, first) {
		if c != "" && (c[0] == '\t' || c[0] == '\r') {
			return "'" + c
		}
		return c
	}
	if _, err := strconv.ParseInt(c, 10, 64); err == nil {
		return c
	}
	return "'" + c
}
