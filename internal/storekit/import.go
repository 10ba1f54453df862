// Package storekit is the machinery both stores share above their SQL:
// the import's batches (ImportInBatches), the sync's transaction (SyncTx,
// which ccsync writes through). Each store implements its interfaces with
// its own SQL; the rules they apply are the root package's.
package storekit

import (
	"context"
	"errors"
	"iter"
	"time"

	"github.com/certorder/certorder"
)

// ImportBatchSize is how many orders ImportInBatches checks and writes at once.
const ImportBatchSize = 1000

// BatchWriter is what ImportInBatches needs of a store, inside the
// import's one transaction: reads of many orders at once, and a write of
// many, with its events.
type BatchWriter interface {
	// Links reads the owner, renewal and status of those of ids that are stored.
	Links(ctx context.Context, ids []int64) (map[int64]certorder.OrderLink, error)
	// RenewedFromOthers returns, for those of ids that an order of a
	// member other than memberID names as its renewal, the lowest such
	// order.
	RenewedFromOthers(ctx context.Context, ids []int64, memberID int64) (map[int64]int64, error)
	// SaveOrders writes checked orders of memberID (no ID twice),
	// replacing those stored, and in the same batch of statements the
	// entries their certificate histories add (certorder.PlanCertificates).
	SaveOrders(ctx context.Context, memberID int64, orders []CheckedOrder, history []certorder.CertificateEntry) error
	// AddEvents writes the events of the orders saved (OrderChange.Events).
	EventWriter
	// The certificate histories of the orders saved: read for those
	// stored before the batch, their removed entries deleted.
	HistoryWriter
}

// CheckedOrder is an order certorder.CheckImport accepted, with the renewal to store.
type CheckedOrder struct {
	Order     *certorder.Order
	RenewedBy int64
}

// ImportInBatches is ImportOrders' work, ImportBatchSize orders at a time,
// with exactly the rules and the outcome of checking (certorder.CheckImport) and
// writing them one by one: the orders of a batch, the orders they name as
// renewals, and the orders of other members that name them are read in two
// queries before it is checked; certorder.CheckImport then runs for each order in
// turn against what was read, overlaid with the orders of the batch it has
// accepted so far (reading the store only for an order a renewal chain
// reaches beyond them); and the batch is written in one go, an order that
// appears twice as its last occurrence, with the events of the stored
// orders it changes (their previous state is the one read before the
// batch). It returns how many orders it stored (an order that appears
// twice counts twice, as one by one).
func ImportInBatches(ctx context.Context, memberID int64, orders iter.Seq2[*certorder.Order, error], w BatchWriter) (int, error) {
	n := 0
	batch := make([]*certorder.Order, 0, ImportBatchSize)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := importBatch(ctx, memberID, batch, w); err != nil {
			return err
		}
		n += len(batch)
		batch = batch[:0]
		return nil
	}
	for o, err := range orders {
		if err != nil {
			return 0, err
		}
		if batch = append(batch, o); len(batch) == ImportBatchSize {
			if err := flush(); err != nil {
				return 0, err
			}
		}
	}
	if err := flush(); err != nil {
		return 0, err
	}
	if dry := dryRunOf(ctx); dry != nil {
		dry.Orders = n
		return 0, ErrDryRun // the store rolls the transaction back
	}
	return n, nil
}

// ErrDryRun ends an import made with DryRun once every order is checked
// and written: the store rolls its transaction back, and the import
// returns an error that matches it (errors.Is) and 0.
var ErrDryRun = errors.New("dry run: nothing written")

// DryCounts is what an import under DryRun found: what the same import
// without it stores, as ImportOrders counts (Orders: an order that
// appears twice counts twice), and how many distinct orders it adds or
// replaces.
type DryCounts struct {
	Orders, New, Replaced int
	seen                  map[int64]bool
}

type dryRunKey struct{}

// DryRun makes ctx that of an ImportOrders that checks and writes exactly
// as always, in its one transaction, then ends with ErrDryRun, so that
// nothing is kept; counts receives what it found.
func DryRun(ctx context.Context, counts *DryCounts) context.Context {
	counts.seen = map[int64]bool{}
	return context.WithValue(ctx, dryRunKey{}, counts)
}

func dryRunOf(ctx context.Context) *DryCounts {
	c, _ := ctx.Value(dryRunKey{}).(*DryCounts)
	return c
}

func importBatch(ctx context.Context, memberID int64, batch []*certorder.Order, w BatchWriter) error {
	own := make([]int64, 0, len(batch))
	ids := make([]int64, 0, 2*len(batch))
	for _, o := range batch {
		own = append(own, o.ID)
		ids = append(ids, o.ID)
		if o.RenewedBy != 0 {
			ids = append(ids, o.RenewedBy)
		}
	}
	stored, err := w.Links(ctx, ids)
	if err != nil {
		return err
	}
	others, err := w.RenewedFromOthers(ctx, own, memberID)
	if err != nil {
		return err
	}
	read := make(map[int64]bool, len(ids)) // asked of the store: absent from stored means not stored
	for _, id := range ids {
		read[id] = true
	}
	accepted := make(map[int64]certorder.OrderLink, len(batch)) // this batch's, as written so far
	lookup := func(ctx context.Context, id int64) (certorder.OrderLink, error) {
		if l, ok := accepted[id]; ok {
			return l, nil
		}
		if l, ok := stored[id]; ok {
			return l, nil
		}
		if !read[id] { // a renewal chain beyond what was read
			m, err := w.Links(ctx, []int64{id})
			if err != nil {
				return certorder.OrderLink{}, err
			}
			read[id] = true
			if l, ok := m[id]; ok {
				stored[id] = l
				return l, nil
			}
		}
		return certorder.OrderLink{}, certorder.ErrNotFound
	}
	// Another member's orders are never written by an import, so what
	// was read before the batch stays true throughout it.
	renewedFromOther := func(_ context.Context, id int64) (int64, error) { return others[id], nil }
	checked := make([]CheckedOrder, 0, len(batch))
	at := make(map[int64]int, len(batch))
	for _, o := range batch {
		renewedBy, err := certorder.CheckImport(ctx, memberID, o, lookup, renewedFromOther)
		if err != nil {
			return err
		}
		accepted[o.ID] = certorder.OrderLink{MemberID: memberID, RenewedBy: renewedBy, Status: o.Status}
		if i, twice := at[o.ID]; twice {
			checked[i] = CheckedOrder{o, renewedBy}
			continue
		}
		at[o.ID] = len(checked)
		checked = append(checked, CheckedOrder{o, renewedBy})
	}
	if dry := dryRunOf(ctx); dry != nil {
		for _, c := range checked {
			if id := c.Order.ID; !dry.seen[id] {
				dry.seen[id] = true
				if _, ok := stored[id]; ok {
					dry.Replaced++
				} else {
					dry.New++
				}
			}
		}
	}
	history, err := planHistories(ctx, checked, stored, w)
	if err != nil {
		return err
	}
	if err := w.SaveOrders(ctx, memberID, checked, history.Entries); err != nil {
		return err
	}
	if len(history.Removed) > 0 {
		if err := w.DeleteCertificates(ctx, history.Removed); err != nil {
			return err
		}
	}
	return w.AddEvents(ctx, batchEvents(memberID, checked, stored, history.Reissues))
}

// planHistories is what recording the checked orders' certificates writes
// (certorder.PlanCertificates), the histories read of the orders stored
// before the batch alone: an order not stored has none (a history is
// written with its order, and orders are never deleted), so that a batch
// of new orders reads nothing.
func planHistories(ctx context.Context, checked []CheckedOrder, stored map[int64]certorder.OrderLink, w HistoryWriter) (certorder.CertificatePlan, error) {
	saved := make([]*certorder.Order, len(checked))
	var known []*certorder.Order
	for i, c := range checked {
		saved[i] = c.Order
		if _, ok := stored[c.Order.ID]; ok {
			known = append(known, c.Order)
		}
	}
	var histories map[int64][]certorder.CertificateEntry
	if len(known) > 0 {
		var err error
		if histories, err = w.Histories(ctx, known); err != nil {
			return certorder.CertificatePlan{}, err
		}
	}
	return certorder.PlanCertificates(histories, saved), nil
}

// batchEvents are the events of writing checked over the orders stored
// before (stored holds every one of them that was), with the reissues
// RecordCertificates found.
func batchEvents(memberID int64, checked []CheckedOrder, stored map[int64]certorder.OrderLink, reissues map[int64]*certorder.ReissuedData) []certorder.Event {
	var events []certorder.Event
	now := time.Now()
	for _, c := range checked {
		prev, ok := stored[c.Order.ID]
		events = append(events, certorder.OrderChange{OrderID: c.Order.ID, MemberID: memberID, Added: !ok,
			PreviousStatus: prev.Status, Status: c.Order.Status, PreviousRenewedBy: prev.RenewedBy, RenewedBy: c.RenewedBy,
			Reissue: reissues[c.Order.ID]}.Events(now)...)
	}
	return events
}
