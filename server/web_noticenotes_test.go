package server_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/certorder/certorder/notice"
	"github.com/certorder/certorder/server"
)

// RFC 8058's one-click unsubscribe POSTed from another origin, as a
// webmail does, works (the signed link is the authority); a confirmation
// link of a member disabled since does not confirm, on GET or POST.
func TestWebNoticeLinksDecided(t *testing.T) {
	t.Parallel()
	f, base := webFixture(t, server.Config{Notices: true})
	ctx := context.Background()
	add := func(member, address string, confirmed bool) string {
		t.Helper()
		m, err := f.store.FindMember(ctx, member)
		if err != nil {
			t.Fatal(err)
		}
		a, _ := notice.NewAddress(address, "en", nil)
		a.CreatedAt = today
		if confirmed {
			a.ConfirmedAt = today
		}
		if a, err = f.store.AddNoticeAddress(ctx, m.ID, a, 5); err != nil {
			t.Fatal(err)
		}
		if confirmed {
			return notice.UnsubscribeToken(a)
		}
		return notice.ConfirmToken(a)
	}
	unsubscribe := add("alice", "ops@acme.example", true)
	if p := oneClick(t, base+"/notices/unsubscribe?t="+url.QueryEscape(unsubscribe)); p.status != http.StatusOK || !strings.Contains(p.body, "Unsubscribed") {
		t.Fatalf("a cross-site one-click unsubscribe: %d\n%s", p.status, p.body)
	}

	confirm := add("carol", "ops@carol.example", false) // carol is disabled (the fixture)
	b := newBrowser(t, base, nil)
	for _, p := range []page{b.get("/notices/confirm?t=" + url.QueryEscape(confirm)), b.post("/notices/confirm", url.Values{"t": {confirm}})} {
		if p.status != http.StatusForbidden || !strings.Contains(p.body, "Member carol is disabled") || strings.Contains(p.body, ">Confirm<") {
			t.Errorf("a disabled member's confirmation: %d\n%s", p.status, p.body)
		}
	}
	carol, _ := f.store.FindMember(ctx, "carol")
	as, _ := f.store.NoticeAddresses(ctx, carol.ID)
	if len(as) != 1 || !as[0].ConfirmedAt.IsZero() {
		t.Fatalf("confirmed while disabled: %+v", as)
	}
}

// oneClick POSTs RFC 8058's one-click body to a message's link as a
// webmail does: from another origin.
func oneClick(t *testing.T, link string) page {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, link, strings.NewReader("List-Unsubscribe=One-Click"))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	req.Header.Set("Origin", "https://webmail.example")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return read(t, resp)
}
