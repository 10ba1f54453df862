package ccsync

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/digicert"
	"github.com/certorder/certorder/internal/orderdoc"
	"github.com/certorder/certorder/internal/printable"
	"github.com/certorder/certorder/internal/storekit"
)

// run is the state of one run.
type run struct {
	*Syncer
	opts    Options
	lock    storekit.SyncLock
	dry     *DryRun               // nil unless a dry run
	txs     storekit.SyncTxRunner // the store, or dry in front of it
	members map[int64]string
	before  digicert.Stats
	rep     Report
	// unassigned tracks a dry run's would-be unassigned orders.
	unassigned map[int64]int64
	progress   Progress
	fetches    int                  // Order info requests made
	resumed    *storekit.SyncResume // where the last run left off, if it did not finish
	done       int64                // incremental: the orders to fetch are fetched up to this one
	// poll: a run (Run), not the events' Apply; since: the start of the
	// window it looks at (the cursor less Overlap).
	poll  bool
	since time.Time
}

func (r *run) do(ctx context.Context) error {
	st, err := r.cfg.Store.SyncState(ctx, 1)
	if err != nil {
		return fmt.Errorf("sync: reading the sync state: %w", err)
	}
	if len(st.Runs) > 0 && !st.Runs[0].OK {
		r.resumed = st.Runs[0].Summary.Resume // over the same window: the cursor did not move since
	}
	members, err := r.cfg.Store.Members(ctx)
	if err != nil {
		return fmt.Errorf("sync: reading the members: %w", err)
	}
	r.setMembers(members)
	if r.dry != nil {
		refs, err := r.cfg.Store.UnassignedRefs(ctx)
		if err != nil {
			return fmt.Errorf("sync: %w", err)
		}
		r.unassigned = map[int64]int64{}
		for _, ref := range refs {
			r.unassigned[ref.ID] = ref.Container
		}
	}
	r.since = st.Cursor.Add(-Overlap)
	r.rep.Full = r.opts.Full || st.Cursor.IsZero()
	if r.rep.Full {
		err = r.full(ctx)
	} else {
		err = r.incremental(ctx, st.Cursor)
	}
	if err == nil {
		err = r.adopt(ctx)
	}
	return err
}

func (r *run) setMembers(members []certorder.Member) {
	r.members = map[int64]string{}
	for _, m := range members {
		r.members[m.ID] = m.Name
	}
}

// memberName names a member, reading the members again for one added
// during the run.
func (r *run) memberName(ctx context.Context, id int64) string {
	if name, ok := r.members[id]; ok || id == 0 {
		return name
	}
	if members, err := r.cfg.Store.Members(ctx); err == nil {
		r.setMembers(members)
	}
	return r.members[id]
}

// finish completes the report and, unless it is a dry run, records the
// run. It returns the run's error, or the failure to record it.
func (r *run) finish(ctx context.Context, runErr error) error {
	after := r.cfg.Client.Stats()
	r.rep.Requests = after.Requests - r.before.Requests
	r.rep.Retries = after.Retries - r.before.Retries
	r.rep.LimiterWait = after.LimiterWait - r.before.LimiterWait
	r.rep.Took = r.now().Sub(r.rep.Started)
	// A cancelled run still says what it did.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if r.dry != nil {
		for id, container := range r.unassigned {
			r.rep.UnassignedOrders = append(r.rep.UnassignedOrders, storekit.UpstreamRef{ID: id, Container: container})
		}
		slices.SortFunc(r.rep.UnassignedOrders, func(a, b storekit.UpstreamRef) int {
			return cmp.Or(cmp.Compare(a.Container, b.Container), cmp.Compare(a.ID, b.ID))
		})
	} else if refs, err := r.cfg.Store.UnassignedRefs(ctx); err == nil {
		r.rep.UnassignedOrders = refs
	} else {
		runErr = errors.Join(runErr, err)
	}
	r.rep.Unassigned = len(r.rep.UnassignedOrders)
	r.cfg.Metrics.ran(r.rep, after, r.before, runErr == nil && r.dry == nil)
	if r.dry != nil {
		return runErr
	}
	if runErr != nil && !r.rep.Full {
		r.rep.Resume = r.resumed
		if r.done != 0 {
			r.rep.Resume = &storekit.SyncResume{After: r.done, Since: r.rep.Started}
		}
	}
	rec := storekit.SyncRun{Started: r.rep.Started, Finished: r.rep.Started.Add(r.rep.Took), Instance: r.cfg.Instance,
		OK: runErr == nil, Summary: r.rep.SyncSummary, Cursor: r.rep.Started}
	if runErr != nil {
		rec.Error = printable.Cut(runErr.Error(), MaxError)
	}
	if err := r.cfg.Store.RecordSyncRun(ctx, rec); err != nil {
		return errors.Join(runErr, fmt.Errorf("sync: recording the run failed, so the cursor did not move: %w", err))
	}
	return runErr
}

// full lists every order and fetches those that need it.
func (r *run) full(ctx context.Context) error {
	r.phase("listing")
	for page, err := range r.cfg.Client.OrderPages(ctx, digicert.ListOptions{}) {
		if err != nil {
			return fmt.Errorf("sync: %w", err)
		}
		r.rep.Listed += len(page.Orders)
		ids, err := r.changedInList(ctx, page.Orders, r.opts.Full)
		if err != nil {
			return err
		}
		if err := r.fetchAndStore(ctx, ids); err != nil {
			return err
		}
		r.phase("listing")
	}
	return nil
}

// incremental asks what changed since the cursor and fetches that.
func (r *run) incremental(ctx context.Context, cursor time.Time) error {
	want := map[int64]bool{}
	r.phase("status changes")
	changes, err := r.cfg.Client.StatusChangesSince(ctx, cursor)
	if err != nil {
		return fmt.Errorf("sync: %w", err)
	}
	r.rep.StatusChanges = len(changes)
	for _, ch := range changes {
		// Those the last run fetched already: again only if changed since.
		if r.resumed == nil || ch.OrderID > r.resumed.After {
			want[ch.OrderID] = true
		}
	}
	if r.resumed != nil {
		since, err := r.cfg.Client.StatusChangesSince(ctx, r.resumed.Since)
		if err != nil {
			return fmt.Errorf("sync: %w", err)
		}
		for _, ch := range since {
			want[ch.OrderID] = true
		}
	}

	// Creating an order is not a status change: list the new ones.
	r.phase("new orders")
	window := digicert.DateRange(cursor.Add(-Overlap), r.now().Add(Overlap))
	for page, err := range r.cfg.Client.OrderPages(ctx, digicert.ListOptions{Filters: map[string]string{"date_created": window}}) {
		if err != nil {
			return fmt.Errorf("sync: %w", err)
		}
		r.rep.Listed += len(page.Orders)
		ids, err := r.changedInList(ctx, page.Orders, false)
		if err != nil {
			return err
		}
		for _, id := range ids {
			want[id] = true
		}
	}

	// A renewal marks the old order, whose status does not change: list
	// the renewed orders and fetch those the store does not know renewed.
	renewed, err := r.unknownRenewals(ctx)
	if err != nil {
		return err
	}
	for _, id := range renewed {
		want[id] = true
	}
	// In order, so that where a run stops says what it has done (done).
	ids := slices.Sorted(maps.Keys(want))
	r.progress.ToFetch += len(ids)
	return r.fetchAndStore(ctx, ids)
}

// unknownRenewals lists the renewed orders and returns those the store
// holds but does not know renewed (or knows renewed by another order):
// their Order info names the renewal.
func (r *run) unknownRenewals(ctx context.Context) ([]int64, error) {
	r.phase("renewals")
	var ids []int64
	for page, err := range r.cfg.Client.OrderPages(ctx, digicert.ListOptions{Filters: map[string]string{"is_renewed": "1"}}) {
		if err != nil {
			return nil, fmt.Errorf("sync: %w", err)
		}
		r.rep.Listed += len(page.Orders)
		known, err := r.cfg.Store.KnownOrders(ctx, listIDs(page.Orders))
		if err != nil {
			return nil, fmt.Errorf("sync: %w", err)
		}
		for _, o := range page.Orders {
			k, ok := known[o.ID]
			if ok && (k.RenewedBy == 0 || o.RenewedOrderID != 0 && k.RenewedBy != o.RenewedOrderID) {
				ids = append(ids, o.ID)
			}
		}
	}
	return ids, nil
}

func listIDs(orders []digicert.OrderSummary) []int64 {
	ids := make([]int64, len(orders))
	for i, o := range orders {
		ids[i] = o.ID
	}
	return ids
}

// changedInList picks the listed orders to fetch, whatever their status
// (a renewal is pending when it appears): those the store does not hold as
// listed, or all of them with all.
func (r *run) changedInList(ctx context.Context, orders []digicert.OrderSummary, all bool) ([]int64, error) {
	known, err := r.cfg.Store.KnownOrders(ctx, listIDs(orders))
	if err != nil {
		return nil, fmt.Errorf("sync: %w", err)
	}
	var ids []int64
	for _, o := range orders {
		if k, ok := known[o.ID]; ok && !all && k.Status == o.Status && k.ValidTill == o.Certificate.ValidTill &&
			(k.RenewedBy != 0) == o.IsRenewed && (k.MemberID != 0 || k.Container == o.Container.ID) {
			continue
		}
		ids = append(ids, o.ID)
	}
	r.progress.ToFetch += len(ids)
	return ids, nil
}

// fetchAndStore fetches Order info for the orders, in order, and stores
// them a batch at a time. At the bound of fetches it stores what it has
// and returns ErrIncomplete.
func (r *run) fetchAndStore(ctx context.Context, ids []int64) error {
	for chunk := range slices.Chunk(ids, r.cfg.Batch) {
		// A lost lock means another sync may be running: stop.
		if err := r.lock.Check(ctx); err != nil {
			return fmt.Errorf("sync: %w", err)
		}
		var batch []storekit.UpstreamOrder
		r.phase("fetching")
		for i, id := range chunk {
			if r.cfg.MaxFetches > 0 && r.fetches >= r.cfg.MaxFetches {
				r.rep.Incomplete, chunk = true, chunk[:i]
				break
			}
			_, u, err := r.fetch(ctx, id)
			if err != nil {
				return err
			}
			if u != nil {
				batch = append(batch, *u)
			}
			r.report()
		}
		if err := r.store(ctx, batch); err != nil {
			return err
		}
		if len(chunk) > 0 {
			r.done = chunk[len(chunk)-1]
		}
		if r.rep.Incomplete {
			return ErrIncomplete
		}
	}
	return nil
}

// fetch fetches one order and maps it. It returns nil for an order to skip
// (gone, not mappable), counted; an error ends the run. The answer as
// fetched comes first (nil: gone).
func (r *run) fetch(ctx context.Context, id int64) (*digicert.Order, *storekit.UpstreamOrder, error) {
	r.fetches++
	o, err := r.cfg.Client.OrderInfo(ctx, id)
	if errors.Is(err, digicert.ErrNotFound) {
		r.rep.UpstreamErrors++
		r.log.Warn("sync: an order listed is gone; skipped", "order", id, "err", err)
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("sync: %w", err)
	}
	r.rep.Fetched++
	r.progress.Fetched++
	doc, err := digicert.SpecOrder(o)
	if err == nil {
		var parsed *certorder.Order
		if parsed, err = orderdoc.Parse(doc); err == nil {
			r.rep.countStatus(parsed.Status)
			return o, &storekit.UpstreamOrder{Order: parsed, Container: o.Container.ID}, nil
		}
	}
	r.rep.UpstreamErrors++
	r.log.Warn("sync: an order does not map to the spec's order; skipped", "order", id, "err", err)
	return o, nil, nil
}

// store applies a batch and accounts for it.
func (r *run) store(ctx context.Context, batch []storekit.UpstreamOrder) error {
	if len(batch) == 0 {
		return nil
	}
	r.phase("storing")
	res, err := ApplyBatch(ctx, r.txs, batch)
	if err != nil {
		return fmt.Errorf("sync: storing orders: %w", err)
	}
	now := r.now()
	var audit []certorder.AuditEntry
	entry := func(memberID, orderID int64, action string) {
		audit = append(audit, certorder.AuditEntry{Time: now, Member: r.memberName(ctx, memberID), Action: action, OrderID: orderID})
	}
	for _, c := range res.Changes {
		kind := ""
		switch {
		case c.Adopted:
			r.rep.New++
			kind = "adopted"
		case c.Added:
			r.rep.New++
			kind = "added"
		case c.StatusChanged():
			r.rep.Changed++
			r.rep.StatusChanged++
			kind = "status"
		default:
			r.rep.Changed++
			if !c.RenewalLinked() {
				kind = "updated"
			}
		}
		if kind != "" {
			entry(c.MemberID, c.OrderID, "sync."+kind)
			r.cfg.Metrics.changed(kind, r.dry != nil)
		}
		if c.RenewalLinked() {
			r.rep.Renewals++
			entry(c.MemberID, c.OrderID, "sync.renewed")
			r.cfg.Metrics.changed("renewed", r.dry != nil)
		}
		if c.Reissue != nil && !c.Added {
			r.rep.Reissues++
			entry(c.MemberID, c.OrderID, "sync.reissued")
			r.cfg.Metrics.changed("reissued", r.dry != nil)
		}
		if r.unassigned != nil {
			delete(r.unassigned, c.OrderID)
		}
		if w := r.cfg.Webhook; w != nil && r.poll && r.dry == nil && c.StatusChanged() {
			w.PollFound(ctx, c.OrderID, c.Status, r.since)
		}
	}
	for _, ref := range res.Unassigned {
		if r.unassigned != nil {
			r.unassigned[ref.ID] = ref.Container
		}
	}
	for _, c := range res.Conflicts {
		r.rep.Conflicts++
		conflict := Conflict{OrderID: c.OrderID, Member: r.memberName(ctx, c.MemberID), Other: r.memberName(ctx, c.Other), Reason: c.Reason}
		r.rep.ConflictList = append(r.rep.ConflictList, conflict)
		entry(c.MemberID, c.OrderID, "sync.conflict")
		r.log.Warn("sync: conflict, left as it was", "order", c.OrderID, "member", conflict.Member,
			"other_member", conflict.Other, "reason", c.Reason)
	}
	if r.dry == nil && len(audit) > 0 {
		// After the commit: a crash between the two loses these entries,
		// never records a change that did not happen.
		if err := r.cfg.Store.AppendAudit(ctx, audit); err != nil {
			return fmt.Errorf("sync: the orders are stored, but the audit trail failed: %w", err)
		}
	}
	return nil
}

// adopt hands unassigned orders to the members that can now take them:
// a division linked since they were stored, or an order they renew.
// Adopting an order can make its renewals adoptable: go round until
// nothing moves.
func (r *run) adopt(ctx context.Context) error {
	r.phase("adopting")
	for range certorder.MaxRenewalChain {
		moved := r.rep.New
		var after int64
		for {
			page, err := r.cfg.Store.UnassignedOrders(ctx, true, after, r.cfg.Batch)
			if err != nil {
				return fmt.Errorf("sync: %w", err)
			}
			if len(page) == 0 {
				break
			}
			if err := r.store(ctx, page); err != nil {
				return err
			}
			after = page[len(page)-1].Order.ID
		}
		if r.rep.New == moved || r.dry != nil {
			// A dry run adopts nothing, so the same orders would come again.
			return nil
		}
	}
	return nil
}

func (r *run) phase(p string) {
	r.progress.Phase = p
	r.report()
}

func (r *run) report() {
	if r.opts.Progress == nil {
		return
	}
	st := r.cfg.Client.Stats()
	r.progress.Listed = r.rep.Listed
	r.progress.Requests = st.Requests - r.before.Requests
	r.progress.LimiterWait = st.LimiterWait - r.before.LimiterWait
	r.opts.Progress(r.progress)
}
