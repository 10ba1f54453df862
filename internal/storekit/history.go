package storekit

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/orderdoc"
)

// HistoryWriter is what RecordCertificates needs of a store, inside the
// transaction that saves the orders.
type HistoryWriter interface {
	// Histories reads the certificate histories of those of orders that
	// have one (storekit.Histories), before the orders are written.
	Histories(ctx context.Context, orders []*certorder.Order) (map[int64][]certorder.CertificateEntry, error)
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
	histories, err := w.Histories(ctx, orders)
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

// Certificates returns the certificate histories of the orders ids
// (readHistories).
func (k *Kit) Certificates(ctx context.Context, ids []int64) (map[int64][]certorder.CertificateEntry, error) {
	h, err := readHistories(ctx, k.Read, k.InList, k.List(ids), nil)
	return h, k.Wrap("certificates", err)
}

// Histories is HistoryWriter.Histories in the transaction tx, in the
// store's dialect (Kit.InList, Kit.List): the histories of those of orders
// that have one, before they are written (readHistories).
func Histories(ctx context.Context, tx DB, in func(column string) string, list func(any) any,
	orders []*certorder.Order) (map[int64][]certorder.CertificateEntry, error) {
	written, ids := make(map[int64]*certorder.Order, len(orders)), make([]int64, len(orders))
	for i, o := range orders {
		written[o.ID], ids[i] = o, o.ID
	}
	return readHistories(ctx, tx, in, list(ids), written)
}

// readHistories reads the certificate histories of the orders of list (the
// store's list argument; in its condition that a column is in it, as
// Kit.InList), each oldest first: the entries stored, then the order's
// current certificate from its document (Seq certorder.CurrentSeq), when
// it has an identity; in one statement, so that a write between two reads
// cannot hide a certificate that moved from the one to the other. Those of
// written (the orders about to be written, by ID; nil for none) whose
// stored document is the one to be written have their certificate, which
// is not read again: an import of orders stored already spent a fifth of
// its CPU reading their documents' certificates (docs/PERFORMANCE.md).
func readHistories(ctx context.Context, db DB, in func(column string) string, list any, written map[int64]*certorder.Order) (map[int64][]certorder.CertificateEntry, error) {
	entries, err := Query(ctx, db, func(row Row) (e certorder.CertificateEntry, err error) {
		return e, scanHistory(row, &e, written)
	},
		`SELECT `+HistoryColumns+`, NULL, 0 FROM order_certificates WHERE `+in("order_id")+`
		UNION ALL
		SELECT `+currentColumns+`, o.doc, o.doc_format FROM orders o WHERE `+in("o.id"), list, list)
	if err != nil {
		return nil, err
	}
	sortHistory(entries, func(e certorder.CertificateEntry) certorder.CertificateEntry { return e })
	out := map[int64][]certorder.CertificateEntry{}
	for _, e := range entries {
		if e.Identified() {
			out[e.OrderID] = append(out[e.OrderID], e)
		}
	}
	return out, nil
}

// currentColumns stand in for HistoryColumns in a read of the orders
// (alias o) that makes each one's current certificate the last entry of
// its history: its ID, certorder.CurrentSeq and empty values, which
// scanHistory fills in from the document that follows them.
var currentColumns = fmt.Sprintf(`o.id, %d, 0, '', '', '', '[]', '', '', '', ''`, certorder.CurrentSeq)

// scanHistory scans HistoryColumns, then an order's document and its
// format, into e, then the columns after them into more: an entry of
// Seq certorder.CurrentSeq is the document's certificate, taken from the
// order of written with the same document if there is one.
func scanHistory(row Row, e *certorder.CertificateEntry, written map[int64]*certorder.Order, more ...any) error {
	var doc []byte
	var format int64
	if err := ScanEntry(row, e, append([]any{&doc, &format}, more...)...); err != nil {
		return err
	}
	if e.Seq != certorder.CurrentSeq {
		return nil
	}
	doc, err := Document("order", e.OrderID, doc, format)
	if err != nil {
		return err
	}
	if o := written[e.OrderID]; o != nil && bytes.Equal(o.Doc, doc) {
		e.Certificate = o.Certificate
		return nil
	}
	c, err := orderdoc.StoredCertificate(doc)
	if err != nil {
		return fmt.Errorf("order %d: %w", e.OrderID, err)
	}
	e.Certificate = c
	return nil
}

// sortHistory sorts entries by order, each order's history oldest first:
// here rather than by the statement, whose sorter would copy every
// document read (re-importing 200,000 stored orders: 9.8 s against 9.0 s).
func sortHistory[T any](entries []T, entry func(T) certorder.CertificateEntry) {
	slices.SortFunc(entries, func(a, b T) int {
		x, y := entry(a), entry(b)
		return cmp.Or(cmp.Compare(x.OrderID, y.OrderID), cmp.Compare(x.Seq, y.Seq))
	})
}
