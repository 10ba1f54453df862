package storetest

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/ccsync"
	"github.com/certorder/certorder/internal/export"
	"github.com/certorder/certorder/internal/orderdoc"
	"github.com/certorder/certorder/internal/storekit"
)

// CertJSON is an order document of a multi-year plan whose current
// certificate is cert id certID: issued with serial (pending reissue when
// serial is ""), valid from validFrom to validTill, the plan running to
// planTill.
func CertJSON(id, certID int64, serial, validFrom, validTill, planTill string) string {
	status, dates := "reissue_pending", ""
	if serial != "" {
		status, dates = "issued", fmt.Sprintf(`"serial_number":%q,"thumbprint":"%s","date_issued":"%sT08:00:00+00:00",`+
			`"valid_from":%q,"valid_till":%q,`, serial, strings.Repeat(serial[len(serial)-2:], 20), validFrom, validFrom, validTill)
	}
	return fmt.Sprintf(`{"OrderId":%d,"certificate":{"id":%d,%s"common_name":"host%d.example.com",`+
		`"dns_names":["host%d.example.com","www.host%d.example.com"],"status":%q},"status":%q,`+
		`"validity_years":3,"order_valid_from":"2026-03-01","order_valid_till":%q}`,
		id, certID, dates, id, id, id, status, status, planTill)
}

// history is an order's certificate history in brief: "id/serial/status/valid_till" each.
func history(t *testing.T, s storekit.Store, id int64) string {
	t.Helper()
	h, err := s.Certificates(context.Background(), []int64{id})
	must(t, err)
	var out []string
	for _, e := range h[id] {
		if e.OrderID != id || e.Seq == 0 {
			t.Errorf("entry %+v of order %d", e, id)
		}
		out = append(out, fmt.Sprintf("%d/%s/%s/%s", e.ID, e.SerialNumber, e.Status, e.ValidTill))
	}
	return strings.Join(out, " ")
}

// Every certificate an order has had is kept, oldest first: the import,
// the sync and a restore record a certificate whose ID or serial number is
// new, and bring one recorded up to date; order.reissued is written once per
// certificate newly issued on an order that had one before, whatever the
// order status was at either write; an export carries the history and a
// restore gives it back byte for byte.
func testCertificateHistory(t *testing.T, open func(t *testing.T) storekit.Store) {
	ctx := context.Background()
	src, dst, third := open(t), open(t), open(t)
	defer src.Close()
	defer dst.Close()
	defer third.Close()
	start := time.Now()
	_, err := src.AddMember(ctx, "alice")
	must(t, err)
	_, err = src.AddEndpoint(ctx, "alice", certorder.Endpoint{URL: "https://alice.example/hook", Secret: "whsec_x"})
	must(t, err)
	check := func(what string, id int64, wantHistory string, wantEvents ...string) {
		t.Helper()
		if got := history(t, src, id); got != wantHistory {
			t.Errorf("%s: history of %d\n%s\nwant\n%s", what, id, got, wantHistory)
		}
		got := outbox(t, src, start)
		if strings.Join(got, "\n") != strings.Join(wantEvents, "\n") {
			t.Errorf("%s: events\n%s\nwant\n%s", what, strings.Join(got, "\n"), strings.Join(wantEvents, "\n"))
		}
	}
	reissued := func(id int64, certID int64, serial, from, till string, prevID int64, prevSerial, prevTill string) string {
		return fmt.Sprintf(`1 order.reissued {"order_id":%d,"certificate":{"id":%d,"serial_number":%q,"thumbprint":%q,"valid_from":%q,"valid_till":%q},`+
			`"previous_certificate":{"id":%d,"serial_number":%q,"thumbprint":%q,"valid_till":%q}}`,
			id, certID, serial, strings.Repeat(serial[len(serial)-2:], 20), from, till,
			prevID, prevSerial, strings.Repeat(prevSerial[len(prevSerial)-2:], 20), prevTill)
	}

	// The import: a new order starts its history; no event.
	_, err = src.ImportOrders(ctx, "alice", Orders(t, CertJSON(1, 501, "0A01", "2026-03-01", "2026-09-16", "2029-03-01")))
	must(t, err)
	check("new order", 1, "501/0A01/issued/2026-09-16")
	// The same certificate again: nothing.
	_, err = src.ImportOrders(ctx, "alice", Orders(t, CertJSON(1, 501, "0A01", "2026-03-01", "2026-09-16", "2029-03-01")))
	must(t, err)
	check("same certificate", 1, "501/0A01/issued/2026-09-16")
	// A reissue between two imports that both say issued: recorded, told once.
	_, err = src.ImportOrders(ctx, "alice", Orders(t, CertJSON(1, 502, "0A02", "2026-09-01", "2027-03-19", "2029-03-01")))
	must(t, err)
	check("reissued by import", 1, "501/0A01/issued/2026-09-16 502/0A02/issued/2027-03-19",
		reissued(1, 502, "0A02", "2026-09-01", "2027-03-19", 501, "0A01", "2026-09-16"))
	_, err = src.ImportOrders(ctx, "alice", Orders(t, CertJSON(1, 502, "0A02", "2026-09-01", "2027-03-19", "2029-03-01")))
	must(t, err)
	check("reissue imported again", 1, "501/0A01/issued/2026-09-16 502/0A02/issued/2027-03-19")

	// The sync: a reissue pending (a new certificate ID, no serial yet),
	// then issued; the order status changes on the way.
	must(t, src.LinkContainer(ctx, "alice", 100))
	sync := func(doc string) {
		t.Helper()
		o, err := orderdoc.Parse([]byte(doc))
		must(t, err)
		_, err = ccsync.ApplyBatch(ctx, src, []storekit.UpstreamOrder{{Order: o, Container: 100}})
		must(t, err)
	}
	sync(CertJSON(1, 503, "", "", "", "2029-03-01"))
	check("reissue pending", 1, "501/0A01/issued/2026-09-16 502/0A02/issued/2027-03-19 503//reissue_pending/",
		`1 order.status_changed {"order_id":1,"status":"reissue_pending","previous_status":"issued"}`)
	sync(CertJSON(1, 503, "0A03", "2027-03-01", "2027-09-16", "2029-03-01"))
	check("reissue issued", 1, "501/0A01/issued/2026-09-16 502/0A02/issued/2027-03-19 503/0A03/issued/2027-09-16",
		`1 order.status_changed {"order_id":1,"status":"issued","previous_status":"reissue_pending"}`,
		reissued(1, 503, "0A03", "2027-03-01", "2027-09-16", 502, "0A02", "2027-03-19"))
	// Both syncs see issued: the reissue is still found, and told once.
	sync(CertJSON(1, 504, "0A04", "2027-09-01", "2028-03-19", "2029-03-01"))
	sync(CertJSON(1, 504, "0A04", "2027-09-01", "2028-03-19", "2029-03-01"))
	check("reissued between two syncs", 1,
		"501/0A01/issued/2026-09-16 502/0A02/issued/2027-03-19 503/0A03/issued/2027-09-16 504/0A04/issued/2028-03-19",
		reissued(1, 504, "0A04", "2027-09-01", "2028-03-19", 503, "0A03", "2027-09-16"))
	// A new order the sync brings: its first certificate, no reissue.
	sync(CertJSON(2, 601, "0B01", "2026-03-01", "2026-09-16", "2027-03-01"))
	check("a new order from the sync", 2, "601/0B01/issued/2026-09-16")
	// A dry run records nothing.
	_, err = ccsync.ApplyBatch(ctx, ccsync.NewDryRun(src), []storekit.UpstreamOrder{upstreamDoc(t, CertJSON(2, 602, "0B02", "2026-09-01", "2027-03-01", "2027-03-01"))})
	must(t, err)
	check("dry run", 2, "601/0B01/issued/2026-09-16")

	// The order's reads say where it stands.
	o, err := src.FindOrder(ctx, 1)
	must(t, err)
	if o.PlanTill != "2029-03-01" || o.Certificate.ValidFrom != "2027-09-01" || o.Certificate.ValidTill != "2028-03-19" || o.Renewal != certorder.RenewalNone {
		t.Errorf("FindOrder: plan %q, certificate %+v, renewal %v", o.PlanTill, o.Certificate, o.Renewal)
	}

	// Export and restore carry every history byte for byte.
	var first, second bytes.Buffer
	must(t, export.Write(ctx, src, &first))
	if !strings.Contains(first.String(), `"certificates":[{"id":501,"serial_number":"0A01"`) {
		t.Fatalf("the export lacks the history:\n%s", first.String())
	}
	must(t, dst.Restore(ctx, export.Read(bytes.NewReader(first.Bytes()))))
	must(t, export.Write(ctx, dst, &second))
	if first.String() != second.String() {
		t.Fatalf("export after restore differs:\n%s\n---\n%s", first.String(), second.String())
	}
	if got, want := history(t, dst, 1), history(t, src, 1); got != want {
		t.Errorf("restored history %s, want %s", got, want)
	}
	if got := outbox(t, dst, start); len(got) != 0 {
		t.Errorf("a restore told %v", got)
	}

	// An export of an earlier version, without histories, restores each
	// order's current certificate as its history.
	var old bytes.Buffer
	for _, line := range strings.SplitAfter(first.String(), "\n") {
		if i := strings.Index(line, `,"certificates":[`); i >= 0 {
			j := strings.Index(line, `],"doc":`)
			line = line[:i] + line[j+1:]
		}
		old.WriteString(line)
	}
	must(t, third.Restore(ctx, export.Read(&old)))
	if got := history(t, third, 1); got != "504/0A04/issued/2028-03-19" {
		t.Errorf("restored without a history: %s", got)
	}

	// An upstream that reissues without end cannot grow a history past
	// MaxCertificates: the newest are kept.
	for i := range certorder.MaxCertificates + 5 {
		_, err := src.ImportOrders(ctx, "alice", Orders(t, CertJSON(9, int64(1000+i), fmt.Sprintf("0F%04d", i), "2026-03-01", "2026-09-16", "2029-03-01")))
		must(t, err)
	}
	h, err := src.Certificates(ctx, []int64{9})
	must(t, err)
	if n := len(h[9]); n != certorder.MaxCertificates || h[9][0].ID != 1005 || h[9][n-1].ID != int64(1000+certorder.MaxCertificates+4) {
		t.Errorf("a long history: %d entries, from %d to %d", n, h[9][0].ID, h[9][n-1].ID)
	}
}

// upstreamDoc is an upstream order of division 100 from a document.
func upstreamDoc(t *testing.T, doc string) storekit.UpstreamOrder {
	t.Helper()
	o, err := orderdoc.Parse([]byte(doc))
	must(t, err)
	return storekit.UpstreamOrder{Order: o, Container: 100}
}

// UpgradeDoc is the document of order 1 of member alice (ID 1) that an
// upgrade test stores with the schema before certificate histories, with
// order.expiring told at 30 days; Upgraded checks what the upgrade made of it.
var UpgradeDoc = CertJSON(1, 501, "0A01", "2026-03-01", "2026-09-16", "2029-03-01")

// Upgraded checks a store upgraded from the schema before certificate
// histories: the stored order's certificate starts its history, its plan's
// and certificate's starts are read, the thresholds told of order.expiring
// stay told, and the next reissue is told with the earlier certificate.
func Upgraded(t *testing.T, s storekit.Store) {
	t.Helper()
	ctx := context.Background()
	start := time.Now()
	if got := history(t, s, 1); got != "501/0A01/issued/2026-09-16" {
		t.Errorf("history after the upgrade: %q", got)
	}
	o, err := s.FindOrder(ctx, 1)
	must(t, err)
	if o.PlanTill != "2029-03-01" || o.Certificate.ValidFrom != "2026-03-01" {
		t.Errorf("after the upgrade: plan %q, certificate from %q", o.PlanTill, o.Certificate.ValidFrom)
	}
	h, err := s.Certificates(ctx, []int64{1})
	must(t, err)
	if c := h[1][0]; c.Thumbprint != strings.Repeat("01", 20) || strings.Join(c.DNSNames, " ") != "host1.example.com www.host1.example.com" ||
		c.DateIssued != "2026-03-01T08:00:00+00:00" || c.CommonName != "host1.example.com" || c.ValidFrom != "2026-03-01" {
		t.Errorf("backfilled entry: %+v", c)
	}
	_, err = s.AddEndpoint(ctx, "alice", certorder.Endpoint{URL: "https://alice.example/hook", Secret: "whsec_x"})
	must(t, err)
	ending, err := s.EndingOrders(ctx, certorder.EventOrderExpiring, "2026-01-01", "2026-12-31")
	must(t, err)
	if len(ending) != 1 || len(ending[0].Notified) != 1 || ending[0].Notified[0] != 30 {
		t.Errorf("thresholds told before the upgrade: %+v", ending)
	}
	_, err = s.ImportOrders(ctx, "alice", Orders(t, CertJSON(1, 502, "0A02", "2026-09-01", "2027-03-19", "2029-03-01")))
	must(t, err)
	got := outbox(t, s, start)
	if len(got) != 1 || !strings.Contains(got[0], `"previous_certificate":{"id":501,"serial_number":"0A01"`) {
		t.Errorf("the first reissue after the upgrade: %v", got)
	}
}

// HistoryUpgrade is what an upgrade test stores with the schema before an
// order's current certificate left its history (SQLite's migration 0020,
// PostgreSQL's 0023), for member alice (ID 1): order 1 reissued twice,
// order 2 with a reissue pending; each history ends in the document's
// certificate, as that schema kept it. HistoryUpgraded checks the upgrade.
var HistoryUpgrade = struct {
	Docs    map[int64]string
	Entries []certorder.CertificateEntry
}{
	Docs: map[int64]string{
		1: CertJSON(1, 503, "0A03", "2027-03-01", "2027-09-16", "2029-03-01"),
		2: CertJSON(2, 602, "", "", "", "2029-03-01"),
	},
	Entries: []certorder.CertificateEntry{
		{OrderID: 1, Certificate: certificateOf(CertJSON(1, 501, "0A01", "2026-03-01", "2026-09-16", "2029-03-01"))},
		{OrderID: 1, Certificate: certificateOf(CertJSON(1, 502, "0A02", "2026-09-01", "2027-03-19", "2029-03-01"))},
		{OrderID: 2, Certificate: certificateOf(CertJSON(2, 601, "0B01", "2026-03-01", "2026-09-16", "2029-03-01"))},
		{OrderID: 1, Certificate: certificateOf(CertJSON(1, 503, "0A03", "2027-03-01", "2027-09-16", "2029-03-01"))},
		{OrderID: 2, Certificate: certificateOf(CertJSON(2, 602, "", "", "", "2029-03-01"))},
	},
}

// certificateOf is the certificate of an order document.
func certificateOf(doc string) certorder.Certificate {
	o, err := orderdoc.Parse([]byte(doc))
	if err != nil {
		panic(err) // the package's own documents
	}
	return o.Certificate
}

// HistoryUpgraded checks a store upgraded with HistoryUpgrade: the
// histories read as before, each current certificate is found by its
// serial and thumbprint as the current one, a replaced one as replaced,
// and the next reissue is told with the certificate it replaces.
func HistoryUpgraded(t *testing.T, s storekit.Store) {
	t.Helper()
	ctx := context.Background()
	if got, want := history(t, s, 1), "501/0A01/issued/2026-09-16 502/0A02/issued/2027-03-19 503/0A03/issued/2027-09-16"; got != want {
		t.Errorf("history of order 1 after the upgrade: %q, want %q", got, want)
	}
	if got, want := history(t, s, 2), "601/0B01/issued/2026-09-16 602//reissue_pending/"; got != want {
		t.Errorf("history of order 2 after the upgrade: %q, want %q", got, want)
	}
	found := func(q certorder.CertificateQuery) string {
		t.Helper()
		ms, err := s.FindCertificates(ctx, q)
		must(t, err)
		var out []string
		for _, m := range ms {
			out = append(out, fmt.Sprintf("%d/%d/%v", m.OrderID, m.ID, m.Current))
		}
		return strings.Join(out, " ")
	}
	if got, want := found(certorder.CertificateQuery{MemberID: 1, Serials: []string{"a03", "a02", "b01"}}),
		"1/502/false 1/503/true 2/601/true"; got != want {
		t.Errorf("found by serial after the upgrade: %s, want %s", got, want)
	}
	if got, want := found(certorder.CertificateQuery{Thumbprints: []string{strings.Repeat("03", 20)}}), "1/503/true"; got != want {
		t.Errorf("found by thumbprint after the upgrade: %s, want %s", got, want)
	}
	start := time.Now()
	_, err := s.AddEndpoint(ctx, "alice", certorder.Endpoint{URL: "https://alice.example/hook", Secret: "whsec_x"})
	must(t, err)
	_, err = s.ImportOrders(ctx, "alice", Orders(t, CertJSON(1, 504, "0A04", "2027-09-01", "2028-03-19", "2029-03-01")))
	must(t, err)
	if got := outbox(t, s, start); len(got) != 1 || !strings.Contains(got[0], `"previous_certificate":{"id":503,"serial_number":"0A03"`) {
		t.Errorf("the first reissue after the upgrade: %v", got)
	}
	if got, want := history(t, s, 1), "501/0A01/issued/2026-09-16 502/0A02/issued/2027-03-19 503/0A03/issued/2027-09-16 504/0A04/issued/2028-03-19"; got != want {
		t.Errorf("history of order 1 after a reissue: %q, want %q", got, want)
	}
}
