package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/certorder/certorder/digicert/digicerttest"
	"github.com/certorder/certorder/internal/testdb"
	"github.com/certorder/certorder/queue"
	"github.com/certorder/certorder/stores"
	"github.com/certorder/certorder/webhook"
)

// A reissue upstream between two syncs that both see the order issued
// reaches the member after one sync: OrderInfo answers the new serial, the
// receiver gets order.reissued once (checked by the Standard Webhooks
// reference library), the order page keeps the earlier certificate in its
// history, info names both ends and the next step; three certificates of
// one plan keep their history through admin export and restore.
func TestReissueThroughSync(t *testing.T) {
	t.Parallel()
	testdb.Each(t, testReissueThroughSync)
}

func testReissueThroughSync(t *testing.T, dsn string) {
	u := newUpstream(t, digicerttest.Options{NoLimits: true})
	created := time.Now().Add(-100 * 24 * time.Hour)
	var ids [2]int64
	for i := range ids {
		id, err := u.sim.AddOrder(digicerttest.OrderSpec{ContainerID: 10001, ValidityYears: 3, Created: created,
			CommonName: "plan" + strconv.Itoa(i) + ".example.com"})
		if err != nil {
			t.Fatal(err)
		}
		if err := u.sim.Issue(id, created); err != nil {
			t.Fatal(err)
		}
		ids[i] = id
	}
	id, other := ids[0], ids[1]
	c := syncCLI(t, dsn, u)
	c.ok("admin", "member", "add", "alice")
	c.ok("admin", "member", "link", "alice", "--container", "10001")
	rc := newReceiver(t)
	endpointID, _ := strconv.ParseInt(rc.addEndpoint(c, "alice", "--events", "order.reissued,order.status_changed"), 10, 64)
	c.sync()
	endpoint, _ := startServe(t, c, "--rate-limit", "0", "--ip-rate-limit", "0", "--webhook-allow-private")
	key := lastLine(c.ok("admin", "key", "create", "alice"))
	idS := strconv.FormatInt(id, 10)
	serial := func() string {
		t.Helper()
		code, body := post(t, endpoint, request("alice", key, "OrderInfo", idS))
		m := regexp.MustCompile(`"serial_number":"([0-9a-f]+)"`).FindStringSubmatch(body)
		if code != 200 || m == nil {
			t.Fatalf("OrderInfo %s: %d %s", idS, code, body)
		}
		return m[1]
	}
	first := serial()

	// Reissued and issued upstream before the next sync: it sees issued,
	// as the one before did.
	reissue := func() {
		t.Helper()
		if _, err := u.sim.Reissue(id, time.Now()); err != nil {
			t.Fatal(err)
		}
		if err := u.sim.Issue(id, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	reissue()
	if summary, _ := c.sync(); count(t, summary, "reissues") != 1 {
		t.Errorf("second sync: %s", summary)
	}
	second := serial()
	if second == first {
		t.Fatalf("OrderInfo still answers serial %s after the reissue", first)
	}
	got := rc.wait(1)
	cert, _ := got[0].data["certificate"].(map[string]any)
	prev, _ := got[0].data["previous_certificate"].(map[string]any)
	if got[0].typ != "order.reissued" || got[0].data["order_id"] != float64(id) || cert["serial_number"] != second ||
		prev["serial_number"] != first || cert["valid_till"] == nil || cert["thumbprint"] == nil || prev["valid_till"] == nil {
		t.Fatalf("the reissue's webhook: %s %v", got[0].typ, got[0].data)
	}
	// Told once: another sync adds nothing before a later event arrives.
	c.sync()
	if err := u.sim.SetStatus(other, "revoked", time.Now()); err != nil {
		t.Fatal(err)
	}
	c.sync()
	if got = rc.wait(2); got[1].typ != "order.status_changed" {
		t.Errorf("after the reissue: %s %v", got[1].typ, got[1].data)
	}
	// A duplicate would have been queued before the status change was.
	store, err := stores.OpenExisting(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	alice, err := store.FindMember(context.Background(), "alice")
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := store.Jobs(context.Background(), queue.List{Kind: queue.KindWebhook, MemberID: alice.ID, SubjectID: endpointID, Limit: 100})
	var types []string
	for _, j := range jobs {
		d, err := webhook.DeliveryOf(j)
		if err != nil {
			t.Fatal(err)
		}
		types = append(types, d.EventType)
	}
	if err != nil || !slices.Equal(types, []string{"order.status_changed", "order.reissued"}) {
		t.Errorf("deliveries: %v %v", types, err)
	}

	// The member page keeps both certificates; info names both ends.
	page := webOrderPage(t, strings.TrimSuffix(endpoint, "api/digicert/"), "alice", key, idS)
	for _, want := range []string{"Certificate history", first, second, "(current)", "Plan (contract)", "Certificate valid"} {
		if !strings.Contains(page, want) {
			t.Errorf("the order page lacks %q", want)
		}
	}
	m := newCLI(t, "")
	m.env["CERTORDER_URL"], m.env["CERTORDER_ACCESS_NAME"], m.env["CERTORDER_ACCESS_KEY"] = endpoint, "alice", key
	info := m.ok("info", idS)
	for _, re := range []string{`Valid till:\s+\d{4}-\d\d-\d\d \(\d+ days remaining\) \(the certificate's end\)`,
		`Plan ends:\s+\d{4}-\d\d-\d\d \(\d+ days remaining\) \(the contract's end\)`, `Next step:\s+none\n`} {
		if !regexp.MustCompile(re).MatchString(info) {
			t.Errorf("info lacks %s:\n%s", re, info)
		}
	}

	// A third certificate; export, restore into a new store, export again.
	reissue()
	c.sync()
	dir := t.TempDir()
	dump := filepath.Join(dir, "export.jsonl")
	if err := os.WriteFile(dump, []byte(c.ok("admin", "export")), 0o600); err != nil {
		t.Fatal(err)
	}
	restored := testdb.SQLite(t)
	if strings.HasPrefix(dsn, "postgres") {
		restored = testdb.Postgres(t)
	}
	r := newCLI(t, restored)
	r.ok("admin", "restore", dump)
	again := r.ok("admin", "export")
	if before, _ := os.ReadFile(dump); string(before) != again {
		t.Fatalf("export after restore differs:\n%s\n---\n%s", before, again)
	}
	line := regexp.MustCompile(`(?m)^.*"order_id":` + idS + `,.*$`).FindString(again)
	if strings.Count(line, `"serial_number"`) != 4 { // three in the history, one in the document
		t.Errorf("the restored order's history: %s", line)
	}
}
