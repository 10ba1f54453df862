package server_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/notice"
	"github.com/certorder/certorder/server"
)

var addedID = regexp.MustCompile(`^/notices\?added=(\d+)$`)

// Confirmation mail bombing: a member adds a stranger's address, removes
// it and adds it again; the fourth confirmation to that mailbox in a day
// is refused (and said on the page, and in the audit trail), however the
// address is spelt; the confirmation's block link (its one-click
// unsubscribe, POSTed cross-site by a mail client) works after the address
// is gone and refuses the mailbox to every later add; a member's own
// budget refuses the eleventh confirmation of a day.
func TestWebNoticeBudget(t *testing.T) {
	t.Parallel()
	f, base := webFixture(t, server.Config{Notices: true, AuditRetention: time.Hour})
	ctx := context.Background()
	b := newBrowser(t, base, nil)
	b.signIn("alice", f.aliceKey)
	csrf := b.get("/notices").csrf(t)
	add := func(address string) page {
		return b.post("/notices", url.Values{"csrf": {csrf}, "address": {address}, "lang": {"en"}})
	}
	// addRemove adds an address and removes it: the flood's step.
	addRemove := func(address string) (certorder.NoticeAddress, page) {
		t.Helper()
		p := add(address)
		m := addedID.FindStringSubmatch(p.header.Get("Location"))
		if m == nil {
			return certorder.NoticeAddress{}, p
		}
		id, _ := strconv.ParseInt(m[1], 10, 64)
		a, err := f.store.FindNoticeAddress(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if p := b.post(fmt.Sprintf("/notices/%d/delete", id), url.Values{"csrf": {csrf}}); p.status != http.StatusSeeOther {
			t.Fatalf("remove: %d", p.status)
		}
		return a, p
	}
	first, _ := addRemove("victim@x.example")
	for _, spelt := range []string{"Victim@X.example", "victim+2@x.example"} {
		if _, p := addRemove(spelt); p.status != http.StatusSeeOther {
			t.Fatalf("confirmation to %s: %d\n%s", spelt, p.status, p.body)
		}
	}
	p := add("victim+3@x.example")
	mustContain(t, "the fourth confirmation", p, "certorder has sent 3 confirmation messages to this address in the last 24 hours")
	if p.status != http.StatusTooManyRequests || p.header.Get("Retry-After") != strconv.Itoa(int(certorder.ConfirmationWindow.Seconds())+1) {
		t.Fatalf("the fourth confirmation: %d, Retry-After %q", p.status, p.header.Get("Retry-After"))
	}

	// The first confirmation, as the mailer composes it: who asked, how to
	// refuse, and the block link, also its List-Unsubscribe.
	m, err := notice.Texts{PublicURL: base}.Compose(notice.Notice{Kind: notice.KindConfirm, Address: first}, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(m.Text, "Member alice of the certorder service at 127.0.0.1 asked for notices about its orders to be sent to victim@x.example") ||
		!strings.Contains(m.Text, "To refuse this and every later request") || !strings.Contains(m.Text, m.Unsubscribe) ||
		!strings.HasPrefix(m.Unsubscribe, base+"/notices/block?t=b.") {
		t.Fatalf("the confirmation:\n%s\nList-Unsubscribe: %s", m.Text, m.Unsubscribe)
	}
	stranger := newBrowser(t, base, nil) // the recipient: not signed in
	mustContain(t, "the block page", stranger.get(strings.TrimPrefix(m.Unsubscribe, base)),
		"Member alice of this certorder service asked for notices to be sent to victim@x.example", `action="/notices/block"`, ">Refuse<")
	for _, forged := range []string{m.Unsubscribe[:len(m.Unsubscribe)-3] + "xyz", base + "/notices/block?t=b.999999.x",
		strings.Replace(m.Unsubscribe, "t=b.", "t=u.", 1)} {
		if p := stranger.get(strings.TrimPrefix(forged, base)); p.status != http.StatusNotFound {
			t.Errorf("a forged block link %s: %d", forged, p.status)
		}
	}
	// The mail client's one-click, from another origin.
	if done := oneClick(t, m.Unsubscribe); done.status != http.StatusOK || !strings.Contains(done.body, "certorder sends no more messages to victim@x.example") {
		t.Fatalf("one-click refusal: %d\n%s", done.status, done.body)
	}
	// A day later the budget would allow it; the block does not, nor for
	// another member, nor for the operator.
	p = add("VICTIM+4@x.example")
	mustContain(t, "a blocked address", p, "The owner of this address asked certorder not to send it any more messages")
	if p.status != http.StatusForbidden {
		t.Fatalf("a blocked address: %d", p.status)
	}
	bob, err := f.store.FindMember(ctx, "bob")
	if err != nil {
		t.Fatal(err)
	}
	vouched, _ := notice.NewAddress("victim@x.example", "en", nil)
	vouched.ConfirmedAt = today
	if _, err := f.store.AddNoticeAddress(ctx, bob.ID, vouched, 5); !strings.Contains(fmt.Sprint(err), "refused") {
		t.Fatalf("the operator adds a blocked address: %v", err)
	}

	// The member's budget: ten confirmations a day, three spent.
	for i := range certorder.ConfirmationsPerMember - certorder.ConfirmationsPerRecipient {
		if _, p := addRemove(fmt.Sprintf("ops%d@acme.example", i)); p.status != http.StatusSeeOther {
			t.Fatalf("confirmation %d: %d", i, p.status)
		}
	}
	p = add("one-more@acme.example")
	mustContain(t, "the eleventh confirmation", p, "You have asked for 10 confirmation messages in the last 24 hours, the most a member may")
	if p.status != http.StatusTooManyRequests {
		t.Fatalf("the eleventh: %d", p.status)
	}

	// The trail: each refusal, and the block, by the member who asked.
	f.handler.Close()
	entries, err := f.store.Audit(ctx, certorder.AuditQuery{Member: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, e := range entries {
		count[e.Action]++
	}
	for action, want := range map[string]int{"web NoticeRefused recipient": 1, "web NoticeRefused blocked": 1,
		"web NoticeRefused member": 1, "web NoticeBlock " + strconv.FormatInt(first.ID, 10): 1} {
		if count[action] != want {
			t.Errorf("audit %q: %d entries, want %d (%v)", action, count[action], want, count)
		}
	}
}
