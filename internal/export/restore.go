package export

import (
	"context"
	"fmt"
	"iter"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/storekit"
)

// Restorer is how a store writes each kind of record of a restore. Run
// feeds it an export, resolving owners by member name, so that every store
// follows the same rules.
type Restorer struct {
	Member func(m *certorder.Member) (id int64, err error) // stores a member, returns its new ID
	Key    func(k *certorder.Key, memberID int64) error
	Link   func(l *certorder.ContainerLink, memberID int64) error
	// Order stores an order with the certificates it replaced, oldest
	// first (certorder.RestoredHistory but the current certificate, which
	// is the order's document's: replaced).
	Order func(o *certorder.Order, memberID int64, replaced []certorder.Certificate) error
	// Endpoint stores a webhook endpoint; nil refuses exports holding one.
	Endpoint func(e *certorder.Endpoint, memberID int64) error
	// Notice stores a notice address as exported (confirmed or not, and
	// unsubscribed or not).
	Notice func(a *certorder.NoticeAddress, memberID int64) error
}

// Run restores records in order; a key, a link, an order, an endpoint or
// a notice address must come after its member, and a member has at most
// certorder.MaxNoticeAddresses notice addresses, each mailbox once. The
// renewals must follow the rules of RecordRenewal: within one member,
// without cycles (a renewal may name an order not in the export, as an
// import may). A record refused is named by its line (records is Read's:
// one record a line).
func (r Restorer) Run(records iter.Seq2[storekit.Record, error]) error {
	run := restoreRun{Restorer: r, ids: map[string]int64{}, owners: map[int64]int64{}, renewals: map[int64]int64{},
		mailboxes: map[string]map[string]int{}}
	n := 0
	for rec, err := range records {
		if err != nil {
			return err
		}
		n++
		if err := run.restore(rec, n); err != nil {
			return fmt.Errorf("line %d: %w", n, err)
		}
	}
	owners, renewals := run.owners, run.renewals
	lookup := func(_ context.Context, id int64) (certorder.OrderLink, error) {
		member, ok := owners[id]
		if !ok {
			return certorder.OrderLink{}, fmt.Errorf("%w: order %d", certorder.ErrNotFound, id)
		}
		return certorder.OrderLink{MemberID: member, RenewedBy: renewals[id]}, nil
	}
	for old, renewedBy := range renewals {
		if err := certorder.CheckRenewal(context.Background(), owners[old], old, renewedBy, lookup); err != nil {
			return err
		}
	}
	return nil
}

// restoreRun is what Run knows of the records it has restored.
type restoreRun struct {
	Restorer
	ids       map[string]int64          // member name -> ID
	owners    map[int64]int64           // order -> member ID
	renewals  map[int64]int64           // old -> new
	mailboxes map[string]map[string]int // member name -> its notice addresses -> line
}

// restore writes rec, the record of line n.
func (r *restoreRun) restore(rec storekit.Record, n int) error {
	if rec.Member != nil {
		id, err := r.Member(rec.Member)
		r.ids[rec.Member.Name] = id
		return err
	}
	var name string
	switch {
	case rec.Key != nil:
		name = rec.Key.Member
	case rec.Link != nil:
		name = rec.Link.Member
	case rec.Notice != nil:
		name = rec.Notice.Member
	case rec.Endpoint != nil:
		name = rec.Endpoint.Member
	case rec.Order != nil:
		name = rec.Order.Member
	}
	id, ok := r.ids[name]
	if !ok {
		return fmt.Errorf("%w: member %s is not in the export before its keys and orders", certorder.ErrInvalid, name)
	}
	switch {
	case rec.Key != nil:
		return r.Key(rec.Key, id)
	case rec.Link != nil:
		return r.Link(rec.Link, id)
	case rec.Notice != nil:
		seen := r.mailboxes[name]
		if seen == nil {
			seen = map[string]int{}
			r.mailboxes[name] = seen
		}
		// The address is in NewAddress's one spelling (lower case).
		if at, dup := seen[rec.Notice.Address]; dup {
			return fmt.Errorf("%w: member %s has notice address %s on line %d already", certorder.ErrInvalid, name, rec.Notice.Address, at)
		}
		if len(seen) == certorder.MaxNoticeAddresses {
			return fmt.Errorf("%w: member %s has more than %d notice addresses", certorder.ErrInvalid, name, certorder.MaxNoticeAddresses)
		}
		seen[rec.Notice.Address] = n
		return r.Notice(rec.Notice, id)
	case rec.Endpoint != nil:
		if r.Endpoint == nil {
			return fmt.Errorf("%w: this store cannot restore webhook endpoints", certorder.ErrInvalid)
		}
		return r.Endpoint(rec.Endpoint, id)
	case rec.Order != nil:
		if _, dup := r.owners[rec.Order.ID]; dup {
			return fmt.Errorf("%w: order %d appears twice", certorder.ErrInvalid, rec.Order.ID)
		}
		r.owners[rec.Order.ID] = id
		if rec.Order.RenewedBy != 0 {
			r.renewals[rec.Order.ID] = rec.Order.RenewedBy
		}
		return r.Order(rec.Order, id, replaced(rec.Order, certorder.RestoredHistory(rec.Order, rec.History)))
	}
	return nil
}

// replaced is the entries of o's history (certorder.RestoredHistory) that
// a store keeps apart from o's document: all but o's current certificate.
func replaced(o *certorder.Order, history []certorder.Certificate) []certorder.Certificate {
	if o.Certificate.Identified() && len(history) > 0 {
		return history[:len(history)-1]
	}
	return history
}
