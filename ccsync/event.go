package ccsync

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/certorder/certorder/internal/storekit"
)

// Apply fetches the orders an upstream event named (CertCentral's
// webhook) and stores them as a run stores what it fetched: ApplyUpstream's
// rules, the members' events, the audit trail, the adoption of unassigned
// orders, within the client's rate limits. It takes the sync lock and
// returns ErrBusy, doing nothing, while another sync (the poll, another
// instance's events) holds it. A renewal the store does not hold for a
// member yet has the renewed orders read as an incremental run reads them,
// so that the order it renews and its owner come with it. Apply records no
// run and moves no cursor: the poll still reconciles everything since its
// last run.
func (s *Syncer) Apply(ctx context.Context, ids []int64) (Report, error) {
	lock, ok, err := s.cfg.Store.LockSync(ctx)
	if err != nil {
		return Report{}, fmt.Errorf("sync: taking the sync lock: %w", err)
	}
	if !ok {
		return Report{}, ErrBusy
	}
	defer lock.Release()
	r := &run{Syncer: s, lock: lock, before: s.cfg.Client.Stats(), txs: s.cfg.Store}
	r.rep.Started = s.now()
	members, err := s.cfg.Store.Members(ctx)
	if err != nil {
		return r.rep, fmt.Errorf("sync: reading the members: %w", err)
	}
	r.setMembers(members)
	if err = r.applyEvent(ctx, ids); err == nil {
		err = r.adopt(ctx)
	}
	after := s.cfg.Client.Stats()
	r.rep.Requests = after.Requests - r.before.Requests
	r.rep.Retries = after.Retries - r.before.Retries
	r.rep.LimiterWait = after.LimiterWait - r.before.LimiterWait
	r.rep.Took = s.now().Sub(r.rep.Started)
	s.cfg.Metrics.requested(after, r.before)
	return r.rep, err
}

// applyEvent fetches the orders (and the renewals Apply reads), then
// stores them in order of their numbers, a batch at a time.
func (r *run) applyEvent(ctx context.Context, ids []int64) error {
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	known, err := r.cfg.Store.KnownOrders(ctx, ids)
	if err != nil {
		return fmt.Errorf("sync: %w", err)
	}
	fetched := map[int64]bool{}
	var orders []storekit.UpstreamOrder
	fetch := func(id int64) (renewal bool, err error) {
		fetched[id] = true
		o, u, err := r.fetch(ctx, id)
		if u != nil {
			orders = append(orders, *u)
		}
		return o != nil && o.IsRenewal, err
	}
	readChain := false
	for _, id := range ids {
		renewal, err := fetch(id)
		if err != nil {
			return err
		}
		// A renewal no member holds yet: the order it renews may not be
		// known renewed, and decides its owner.
		readChain = readChain || renewal && known[id].MemberID == 0
	}
	if readChain {
		renewed, err := r.unknownRenewals(ctx)
		if err != nil {
			return err
		}
		for _, id := range renewed {
			if !fetched[id] {
				if _, err := fetch(id); err != nil {
					return err
				}
			}
		}
	}
	// An order before its renewals, as a run stores them.
	slices.SortFunc(orders, func(a, b storekit.UpstreamOrder) int { return cmp.Compare(a.Order.ID, b.Order.ID) })
	for batch := range slices.Chunk(orders, r.cfg.Batch) {
		if err := r.store(ctx, batch); err != nil {
			return err
		}
	}
	return nil
}
