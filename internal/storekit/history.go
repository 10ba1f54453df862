package storekit

import (
	"context"

	"github.com/certorder/certorder"
)

// HistoryWriter is what RecordCertificates needs of a store, inside the
// transaction that saves the orders.
type HistoryWriter interface {
	// Histories reads the certificate histories of those of ids that have
	// one, each oldest first.
	Histories(ctx context.Context, ids []int64) (map[int64][]certorder.CertificateEntry, error)
	// SaveCertificates writes history entries: one with Seq 0 is added
	// after the order's others, one with a Seq replaces that entry.
	SaveCertificates(ctx context.Context, entries []certorder.CertificateEntry) error
	// TrimCertificates deletes all but the newest keep entries of each of
	// the orders ids.
	TrimCertificates(ctx context.Context, ids []int64, keep int) error
}

// RecordCertificates records the current certificate of each of orders (no
// order twice) in its order's history, in the transaction w writes in: a
// certificate not recorded yet is added, one recorded is brought up to date
// (its serial number once issued, a new status). It returns the reissues it
// found, by order: a certificate newly issued on an order that had an
// issued certificate before. The import (through certorder.PlanCertificates, its
// writes in the orders' batch), the sync and a restore (RestoredHistory)
// record by the same rule, so that every history is kept alike.
func RecordCertificates(ctx context.Context, w HistoryWriter, orders []*certorder.Order) (map[int64]*certorder.ReissuedData, error) {
	ids := make([]int64, 0, len(orders))
	for _, o := range orders {
		if o.Certificate.Identified() {
			ids = append(ids, o.ID)
		}
	}
	if len(ids) == 0 {
		return nil, nil
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
	if len(p.Full) > 0 {
		return p.Reissues, w.TrimCertificates(ctx, p.Full, certorder.MaxCertificates)
	}
	return p.Reissues, nil
}
