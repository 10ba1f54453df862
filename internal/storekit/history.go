package storekit

import (
	"context"
	"fmt"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/orderdoc"
)

// HistoryWriter is what RecordCertificates needs of a store, inside the
// transaction that saves the orders.
type HistoryWriter interface {
	// Histories reads the certificate histories of those of ids that have
	// one (ReadHistories), before the orders are written.
	Histories(ctx context.Context, ids []int64) (map[int64][]certorder.CertificateEntry, error)
	// SaveCertificates adds history entries (Seq 0), each after its
	// order's others.
	SaveCertificates(ctx context.Context, entries []certorder.CertificateEntry) error
	// DeleteCertificates deletes the entries of the Seqs.
	DeleteCertificates(ctx context.Context, seqs []int64) error
}

// RecordCertificates records the current certificate of each of orders (no
// order twice) in its order's history, in the transaction w writes in,
// before the orders are saved: the certificate an order's document held
// before is added to its history when the order has another now. It
// returns the reissues it found, by order: a certificate newly issued on
// an order that had an issued certificate before. The import (through
// certorder.PlanCertificates, its writes in the orders' batch), the sync
// and a restore (RestoredHistory) record by the same rule, so that every
// history is kept alike.
func RecordCertificates(ctx context.Context, w HistoryWriter, orders []*certorder.Order) (map[int64]*certorder.ReissuedData, error) {
	ids := make([]int64, len(orders))
	for i, o := range orders {
		ids[i] = o.ID
	}
	histories, err := w.Histories(ctx, ids)
	if err != nil {
		return nil, err
	}
	p := certorder.PlanCertificates(histories, orders)
	if len(p.Entries) > 0 {
		if err := w.SaveCertificates(ctx, p.Entries); err != nil {
			return nil, err
		}
	}
	if len(p.Removed) > 0 {
		return p.Reissues, w.DeleteCertificates(ctx, p.Removed)
	}
	return p.Reissues, nil
}

// ReadHistories reads the certificate histories of the orders of list (the
// store's list argument; in its condition that a column is in it, as
// Kit.InList), each oldest first: the entries stored, then the order's
// current certificate from its document (Seq certorder.CurrentSeq), when
// it has an identity.
func ReadHistories(ctx context.Context, db DB, in func(column string) string, list any) (map[int64][]certorder.CertificateEntry, error) {
	entries, err := Query(ctx, db, func(row Row) (e certorder.CertificateEntry, err error) { return e, ScanEntry(row, &e) },
		`SELECT `+HistoryColumns+` FROM order_certificates WHERE `+in("order_id")+` ORDER BY order_id, seq`, list)
	if err != nil {
		return nil, err
	}
	currents, err := Query(ctx, db, func(row Row) (certorder.CertificateEntry, error) { return scanCurrent(row) },
		`SELECT id, doc, doc_format FROM orders WHERE `+in("id")+` ORDER BY id`, list)
	if err != nil {
		return nil, err
	}
	out := map[int64][]certorder.CertificateEntry{}
	for _, e := range entries {
		out[e.OrderID] = append(out[e.OrderID], e)
	}
	for _, e := range currents {
		if e.Identified() {
			out[e.OrderID] = append(out[e.OrderID], e)
		}
	}
	return out, nil
}

// scanCurrent reads an order's id, document and its format, and returns
// its current certificate as the last entry of its history.
func scanCurrent(row Row, more ...any) (certorder.CertificateEntry, error) {
	var id, format int64
	var doc []byte
	if err := row.Scan(append([]any{&id, &doc, &format}, more...)...); err != nil {
		return certorder.CertificateEntry{}, err
	}
	if format != certorder.DocFormat {
		return certorder.CertificateEntry{}, fmt.Errorf("order %d is stored in document format %d; this binary reads %d", id, format, certorder.DocFormat)
	}
	o, err := orderdoc.Parse(doc)
	if err != nil {
		return certorder.CertificateEntry{}, fmt.Errorf("order %d: %w", id, err)
	}
	return certorder.CertificateEntry{OrderID: id, Seq: certorder.CurrentSeq, Certificate: o.Certificate}, nil
}
