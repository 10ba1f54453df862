package storekit

import (
	"fmt"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/orderdoc"
)

// What both stores read alike: the columns are the same in either SQL
// dialect, and the scanning of them is written here once.

// Row is a row to scan: database/sql's *Row and *Rows, pgx's Row and Rows.
type Row interface{ Scan(dest ...any) error }

// Rows is a result to read row by row: database/sql's *Rows (which the
// caller closes), pgx's Rows.
type Rows interface {
	Row
	Next() bool
	Err() error
}

// Collect scans every row of rows with scan.
func Collect[T any](rows Rows, scan func(Row) (T, error)) ([]T, error) {
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// LifecycleColumns are what certorder.Order.Lifecycle needs beyond the
// order's own row, read by FindOrder, ListOrders and the scans of ends,
// with LifecycleJoin; Lifecycle scans them.
const (
	LifecycleColumns = `o.valid_from, o.plan_till, COALESCE(rn.status, ''), COALESCE(rn.valid_till, '')`
	LifecycleJoin    = ` LEFT JOIN orders rn ON rn.id = o.renewed_by`
)

// Lifecycle scans LifecycleColumns into the order it then fills.
type Lifecycle struct{ validFrom, planTill, renewalStatus, renewalTill string }

// Dest is where Scan puts the columns.
func (l *Lifecycle) Dest() []any {
	return []any{&l.validFrom, &l.planTill, &l.renewalStatus, &l.renewalTill}
}

// Fill sets o's certificate start, plan end and renewal state (o.RenewedBy
// read already).
func (l *Lifecycle) Fill(o *certorder.Order) {
	o.Certificate.ValidFrom, o.PlanTill = l.validFrom, l.planTill
	o.Renewal = certorder.RenewalStateOf(o.RenewedBy, l.renewalStatus, l.renewalTill)
}

// EndColumn is the column of the end an event of type typ counts to
// (EndingOrder.End).
func EndColumn(typ string) (string, error) {
	switch typ {
	case certorder.EventOrderExpiring:
		return "valid_till", nil
	case certorder.EventOrderPlanEnding:
		return "plan_till", nil
	}
	return "", fmt.Errorf("%w: %q is not an event of an end", certorder.ErrInvalid, typ)
}

// EndingColumns are the columns ScanEnding reads, before the thresholds
// told (a comma-separated list the store aggregates its own way).
const EndingColumns = `o.id, o.member_id, o.status, o.valid_till, COALESCE(o.renewed_by, 0), ` + LifecycleColumns

// ScanEnding scans EndingColumns and the thresholds told.
func ScanEnding(row Row) (EndingOrder, error) {
	var o EndingOrder
	var l Lifecycle
	var notified string
	err := row.Scan(append(append([]any{&o.ID, &o.MemberID, &o.Status, &o.Certificate.ValidTill, &o.RenewedBy},
		l.Dest()...), &notified)...)
	l.Fill(&o.Order)
	o.Notified = ParseThresholds(notified)
	return o, err
}

// UnassignedColumns are the columns ScanUnassigned reads.
const UnassignedColumns = `id, container_id, COALESCE(renewed_by, 0), doc, doc_format`

// ScanUnassigned reads an unassigned order: its document is parsed again,
// refused if stored in another format than this binary reads.
func ScanUnassigned(row Row) (*UpstreamOrder, error) {
	var id, container, renewedBy, format int64
	var doc []byte
	if err := row.Scan(&id, &container, &renewedBy, &doc, &format); err != nil {
		return nil, err
	}
	doc, err := Document("unassigned order", id, doc, format)
	if err != nil {
		return nil, err
	}
	o, err := orderdoc.Parse(doc)
	if err != nil {
		return nil, fmt.Errorf("unassigned order %d: %w", id, err)
	}
	o.RenewedBy = renewedBy
	return &UpstreamOrder{Order: o, Container: container}, nil
}

// OrderSorts are the ORDER BY clauses of the sorts of a list of orders
// (alias o).
var OrderSorts = map[certorder.OrderSort]string{
	certorder.SortByID:         "o.id",
	certorder.SortByExpiry:     "o.valid_till, o.id",
	certorder.SortByExpiryDesc: "o.valid_till DESC, o.id",
}

// HideRenewed is the condition of certorder.OrderQuery.HideRenewed: it
// leaves out the orders (alias o) whose renewal is issued, a renewal with
// a certificate, not canceled or rejected (certorder.RenewalStateOf,
// certorder.OrderEnded).
const HideRenewed = `(o.renewed_by IS NULL OR NOT EXISTS (SELECT 1 FROM orders rn WHERE rn.id = o.renewed_by
	AND rn.valid_till <> '' AND lower(rn.status) NOT IN ('canceled', 'cancelled', 'rejected')))`
