package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/storekit"
)

// The confirmation budget: confirmations to one recipient (any case, any
// +tag, any member) and those one member asks for are counted over a day,
// removing the address forgets none, and the store refuses one more with
// when it may be sent; adds at once from several members never pass the
// recipient's budget; the operator's addresses (confirmed) are not
// counted; a blocked recipient is refused to everyone until unblocked;
// a confirmation's record outlives its address.
func testNoticeBudget(t *testing.T, open func(t *testing.T) storekit.Store) {
	ctx := context.Background()
	s := open(t)
	defer s.Close()
	member := func(name string) int64 {
		t.Helper()
		m, err := s.AddMember(ctx, name)
		must(t, err)
		return m.ID
	}
	at := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	add := func(memberID int64, address string, when time.Time, confirmed bool) (certorder.NoticeAddress, error) {
		a := certorder.NoticeAddress{Address: address, Lang: "en", Secret: "c2VjcmV0LXNlY3JldC1zZWNyZXQ=", CreatedAt: when}
		if confirmed {
			a.ConfirmedAt = when
		}
		return s.AddNoticeAddress(ctx, memberID, a, certorder.MaxNoticeAddresses)
	}
	// addRemove adds an address to confirm and removes it, as the flood does.
	addRemove := func(memberID int64, address string, when time.Time) error {
		a, err := add(memberID, address, when, false)
		if err == nil {
			must(t, s.DeleteMemberNoticeAddress(ctx, memberID, a.ID))
		}
		return err
	}
	wantBudget := func(err error, budget string, until time.Time) {
		t.Helper()
		var b *certorder.BudgetError
		if !errors.As(err, &b) || !errors.Is(err, certorder.ErrLimit) || b.Budget != budget || !b.Until.Equal(until) {
			t.Fatalf("error %v, want the %s budget until %v", err, budget, until)
		}
	}

	// One recipient: three a day, whoever asks, however it is spelt.
	mallory, bob := member("mallory"), member("bob")
	first, err := add(mallory, "victim@x.example", at, false)
	must(t, err)
	must(t, s.DeleteMemberNoticeAddress(ctx, mallory, first.ID))
	must(t, addRemove(mallory, "victim+1@x.example", at.Add(time.Minute)))
	must(t, addRemove(mallory, "Victim@X.example", at.Add(2*time.Minute)))
	for _, spelt := range []string{"victim@x.example", "VICTIM+2@x.example"} {
		wantBudget(addRemove(mallory, spelt, at.Add(3*time.Minute)), certorder.BudgetRecipient, at.Add(certorder.ConfirmationWindow))
	}
	wantBudget(addRemove(bob, "victim@x.example", at.Add(4*time.Minute)), certorder.BudgetRecipient, at.Add(certorder.ConfirmationWindow))
	// The operator vouches for an address: no confirmation, no budget.
	_, err = add(bob, "victim@x.example", at.Add(5*time.Minute), true)
	must(t, err)
	// A day after the first, one more.
	must(t, addRemove(mallory, "victim@x.example", at.Add(certorder.ConfirmationWindow+time.Second)))

	// The first confirmation's record outlives its address: its block
	// link is checked against it.
	cs, err := s.NoticeConfirmations(ctx, first.ID)
	must(t, err)
	if len(cs) == 0 || cs[len(cs)-1].Address != "victim@x.example" || cs[len(cs)-1].Member != "mallory" ||
		cs[len(cs)-1].Secret != first.Secret || !cs[len(cs)-1].SentAt.Equal(at) {
		t.Fatalf("NoticeConfirmations(%d) = %+v", first.ID, cs)
	}

	// One member: ten a day, to any recipients.
	carol := member("carol")
	for i := range certorder.ConfirmationsPerMember {
		must(t, addRemove(carol, fmt.Sprintf("c%d@c.example", i), at.Add(time.Duration(i)*time.Minute)))
	}
	wantBudget(addRemove(carol, "one-more@c.example", at.Add(time.Hour)), certorder.BudgetMember, at.Add(certorder.ConfirmationWindow))
	_, err = add(carol, "vouched@c.example", at.Add(time.Hour), true)
	must(t, err)

	// Members at once: the recipient's budget holds.
	var wg sync.WaitGroup
	var mu sync.Mutex
	added, refused := 0, 0
	ids := make([]int64, 8)
	for i := range ids {
		ids[i] = member(fmt.Sprintf("m%d", i))
	}
	for _, id := range ids {
		wg.Go(func() {
			_, err := add(id, "flood@z.example", at, false)
			mu.Lock()
			defer mu.Unlock()
			var b *certorder.BudgetError
			switch {
			case err == nil:
				added++
			case errors.As(err, &b):
				refused++
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if added != certorder.ConfirmationsPerRecipient || refused != len(ids)-added {
		t.Fatalf("at once: %d added, %d refused; want %d added", added, refused, certorder.ConfirmationsPerRecipient)
	}

	// A block: refused to everyone, confirmed or not, until lifted.
	must(t, s.BlockNoticeRecipient(ctx, "blocked@y.example", at))
	must(t, s.BlockNoticeRecipient(ctx, "blocked@y.example", at.Add(time.Hour))) // twice: the first stays
	for _, confirmed := range []bool{false, true} {
		_, err := add(bob, "Blocked+x@Y.example", at.Add(2*time.Hour), confirmed)
		wantErr(t, err, certorder.ErrBlocked)
	}
	must(t, s.UnblockNoticeRecipient(ctx, "blocked@y.example"))
	wantErr(t, s.UnblockNoticeRecipient(ctx, "blocked@y.example"), certorder.ErrNotFound)
	_, err = add(bob, "blocked@y.example", at.Add(2*time.Hour), false)
	must(t, err)
}
