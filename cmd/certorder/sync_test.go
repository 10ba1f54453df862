package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/ccsync"
	"github.com/certorder/certorder/digicert"
	"github.com/certorder/certorder/digicert/digicerttest"
	"github.com/certorder/certorder/internal/testdb"
	"github.com/certorder/certorder/stores"
)

// simKey is the simulator's CertCentral API key: no output may show it.
const simKey = "dc-cli-test-key-7c1d44e0"

// upstream is a CertCentral simulator on loopback.
type upstream struct {
	sim *digicerttest.Server
	url string
	// inFlight and maxInFlight count requests being answered at once.
	inFlight, maxInFlight atomic.Int64
}

func newUpstream(t *testing.T, opts digicerttest.Options) *upstream {
	t.Helper()
	opts.APIKey = simKey
	u := &upstream{sim: digicerttest.NewServer(opts)}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := u.inFlight.Add(1)
		defer u.inFlight.Add(-1)
		for m := u.maxInFlight.Load(); n > m && !u.maxInFlight.CompareAndSwap(m, n); m = u.maxInFlight.Load() {
		}
		u.sim.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	u.url = ts.URL + digicerttest.BasePath
	return u
}

// requests is how many requests the simulator has answered.
func (u *upstream) requests() int {
	n := 0
	for _, v := range u.sim.Requests() {
		n += v
	}
	return n
}

// syncCLI is a cli whose environment points the sync at u, limits off.
func syncCLI(t *testing.T, dsn string, u *upstream) *cli {
	c := newStoreCLI(t, dsn)
	c.env["CERTORDER_DIGICERT_URL"] = u.url
	c.env["CERTORDER_DIGICERT_API_KEY"] = simKey
	c.env["CERTORDER_DIGICERT_LIMITS"] = "off"
	return c
}

// sync runs certorder sync, which must succeed, and returns its summary line.
func (c *cli) sync(args ...string) (summary, stdout string) {
	c.t.Helper()
	out, errOut, err := c.run("", append([]string{"sync"}, args...)...)
	if err != nil {
		c.t.Fatalf("certorder sync %v: %v\n%s%s", args, err, out, errOut)
	}
	if strings.Contains(out+errOut, simKey) {
		c.t.Fatal("certorder sync printed the CertCentral API key")
	}
	line := lastLine(out)
	if !strings.HasPrefix(line, "sync ") {
		c.t.Fatalf("the output does not end with the summary:\n%s", out)
	}
	return line, out
}

// count reads "name N" from a summary line.
func count(t *testing.T, summary, name string) int {
	t.Helper()
	m := regexp.MustCompile(name + ` (\d+)`).FindStringSubmatch(summary)
	if m == nil {
		t.Fatalf("no %q in %q", name, summary)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// specFields are the members the spec allows in an order (sections 2.2-2.5).
var specFields = map[string][]string{
	"": {"OrderId", "certificate", "status", "is_renewed", "was_renewed_by_order_id", "date_created", "date_issued",
		"validity_years", "order_valid_from", "order_valid_till", "product", "purchased_dns_names", "purchased_wildcard_names", "api_key"},
	"certificate": {"id", "thumbprint", "serial_number", "common_name", "dns_names", "status", "date_created", "date_issued",
		"valid_from", "valid_till", "days_remaining", "cert_validity", "csr", "is_rsassa_pss", "signature_hash", "profile_option",
		"key_size", "ca_cert", "user_id", "receipt_id", "purchased_dns_names", "purchased_wildcard_names"},
	"certificate.cert_validity": {"years", "days", "custom_expiration_date"},
	"certificate.ca_cert":       {"id", "name"},
	"product":                   {"name_id", "name", "type", "csr_required"},
	"api_key":                   {"name", "key_type", "url_mask"},
}

// onlySpecFields fails for any member of an answer the spec does not list.
func onlySpecFields(t *testing.T, path string, obj map[string]any) {
	t.Helper()
	allowed, ok := specFields[path]
	if !ok {
		t.Fatalf("an object at %q, where the spec has none", path)
	}
	for k, v := range obj {
		if !slices.Contains(allowed, k) {
			t.Errorf("member %q at %q is not in the spec", k, path)
		}
		if sub, ok := v.(map[string]any); ok {
			onlySpecFields(t, strings.TrimPrefix(path+"."+k, "."), sub)
		}
	}
}

// The whole story through the CLI and a real serve: link, dry run, first
// sync, the field mapping as members see it, unassigned orders invisible,
// a renewal and a status change upstream seen after the next sync, in
// RenewCheck and on the web page, each sync far cheaper than the first.
func TestSyncThroughServe(t *testing.T) {
	t.Parallel()
	testdb.Each(t, testSyncThroughServe)
}

func testSyncThroughServe(t *testing.T, dsn string) {
	u := newUpstream(t, digicerttest.Options{NoLimits: true})
	if _, err := u.sim.Generate(150, 2); err != nil {
		t.Fatal(err)
	}
	c := syncCLI(t, dsn, u)
	c.ok("admin", "member", "add", "alice")
	c.ok("admin", "member", "add", "bob")
	if out := c.ok("admin", "member", "link", "alice", "--container", "10001"); !strings.Contains(out, "linked to division 10001") {
		t.Fatalf("link: %s", out)
	}
	c.ok("admin", "member", "link", "bob", "--container", "10002")
	c.fails(exitFailure, "admin", "member", "link", "bob", "--container", "10001") // alice's
	c.fails(exitUsage, "admin", "member", "link", "bob")
	c.fails(exitFailure, "admin", "member", "link", "nobody", "--container", "5")
	if out := c.ok("admin", "member", "list"); !regexp.MustCompile(`(?m)^alice\s+enabled\s+on\s+\S+\s+10001$`).MatchString(out) {
		t.Fatalf("member list does not show the link:\n%s", out)
	}

	// A dry run says what it would do and changes nothing.
	before := c.ok("admin", "export")
	dry, _ := c.sync("--dry-run")
	if !strings.HasPrefix(dry, "sync dry run, nothing written (full") || count(t, dry, "new") == 0 {
		t.Fatalf("dry run: %s", dry)
	}
	if after := c.ok("admin", "export"); after != before {
		t.Fatalf("a dry run changed the store:\n%s", after)
	}
	if st := c.ok("admin", "sync", "status"); !strings.Contains(st, "cursor: none") || !strings.Contains(st, "last run: none") {
		t.Fatalf("sync status after a dry run:\n%s", st)
	}

	dryRequests := u.requests()
	first, out := c.sync()
	if !strings.HasPrefix(first, "sync ok (full") || count(t, first, "new") != count(t, dry, "new") ||
		count(t, first, "renewals linked") == 0 || count(t, first, "unassigned") == 0 {
		t.Fatalf("first sync: %s (dry run: %s)", first, dry)
	}
	if !strings.Contains(out, "division 10003: ") {
		t.Errorf("the unassigned orders are not listed:\n%s", out)
	}
	firstRequests := u.requests() - dryRequests
	status := c.ok("admin", "sync", "status")
	for _, want := range []string{"cursor: 20", "ok, by ", "division 10001: member alice", "unassigned orders: "} {
		if !strings.Contains(status, want) {
			t.Errorf("sync status lacks %q:\n%s", want, status)
		}
	}

	endpoint, _ := startServe(t, c, "--rate-limit", "0", "--ip-rate-limit", "0")
	key := lastLine(c.ok("admin", "key", "create", "alice"))
	store, err := stores.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	alice, err := store.FindMember(context.Background(), "alice")
	if err != nil {
		t.Fatal(err)
	}
	orders, err := store.ListOrders(context.Background(), certorder.OrderQuery{MemberID: alice.ID})
	if err != nil || len(orders) == 0 {
		t.Fatalf("alice has %d orders, %v", len(orders), err)
	}
	// Every order alice sees has the spec's members only, and is
	// CertCentral's Order info mapped, with the derived fields.
	personal := regexp.MustCompile(`@example\.net|\+1 801 555|Lovelace|Hopper|Torvalds|Hamilton|Thompson|Example Holdings|Division|Platform Team|Call `)
	var renewable, revoked int64
	for _, o := range orders {
		code, body := post(t, endpoint, request("alice", key, "OrderInfo", strconv.FormatInt(o.ID, 10)))
		if code != 200 {
			t.Fatalf("OrderInfo %d: %d %s", o.ID, code, body)
		}
		if m := personal.FindString(body); m != "" {
			t.Errorf("order %d shows %q: %s", o.ID, m, body)
		}
		var got map[string]any
		if err := json.Unmarshal([]byte(body), &got); err != nil {
			t.Fatal(err)
		}
		onlySpecFields(t, "", got)
		raw, _ := u.sim.OrderInfo(o.ID)
		upstreamOrder, err := digicert.ParseOrder(raw)
		if err != nil {
			t.Fatal(err)
		}
		mapped, err := digicert.SpecOrder(upstreamOrder)
		if err != nil {
			t.Fatal(err)
		}
		var want map[string]any
		json.Unmarshal(mapped, &want)
		delete(got["certificate"].(map[string]any), "days_remaining")
		if !reflect.DeepEqual(got, want) {
			t.Errorf("order %d:\n got %v\nwant %v", o.ID, got, want)
		}
		switch {
		case o.RenewedBy != 0 || o.Status != "issued":
		case renewable == 0:
			renewable = o.ID
		case revoked == 0:
			revoked = o.ID
		}
	}
	// An unassigned order is nobody's: not alice's, not the operator's to show.
	refs, err := store.UnassignedRefs(context.Background())
	if err != nil || len(refs) == 0 {
		t.Fatalf("unassigned: %v %v", refs, err)
	}
	hidden := strconv.FormatInt(refs[0].ID, 10)
	if code, body := post(t, endpoint, request("alice", key, "OrderInfo", hidden)); code != 404 || !strings.Contains(body, "Error(131)") {
		t.Errorf("an unassigned order for alice: %d %s", code, body)
	}
	c.fails(exitFailure, "admin", "order", "show", hidden)

	// Upstream: alice's order renewed into a division nobody has, and a
	// status change; the next sync (incremental) shows both.
	newID, err := u.sim.Renew(renewable, 10003, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := u.sim.Issue(newID, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := u.sim.SetStatus(revoked, "revoked", time.Now()); err != nil {
		t.Fatal(err)
	}
	second, _ := c.sync()
	incRequests := u.requests() - firstRequests - dryRequests
	if !strings.HasPrefix(second, "sync ok (incremental") || count(t, second, "renewals linked") != 1 || count(t, second, "new") != 1 {
		t.Errorf("second sync: %s", second)
	}
	if incRequests*10 > firstRequests {
		t.Errorf("the incremental sync made %d requests, the first %d", incRequests, firstRequests)
	}
	t.Logf("first sync: %d requests; incremental: %d", firstRequests, incRequests)
	old, renewed := strconv.FormatInt(renewable, 10), strconv.FormatInt(newID, 10)
	if code, body := post(t, endpoint, request("alice", key, "RenewCheck", old)); code != 200 ||
		body != `{"orderId":`+old+`,"renewed_orderId":`+renewed+`}` {
		t.Errorf("RenewCheck %s after the sync: %d %s", old, code, body)
	}
	if code, body := post(t, endpoint, request("alice", key, "OrderInfo", renewed)); code != 200 || !strings.Contains(body, `"OrderId":`+renewed) {
		t.Errorf("the renewal for alice: %d %s", code, body)
	}
	if _, body := post(t, endpoint, request("alice", key, "OrderInfo", strconv.FormatInt(revoked, 10))); !strings.Contains(body, `"status":"revoked"`) {
		t.Errorf("the status change: %s", body)
	}
	page := webOrderPage(t, strings.TrimSuffix(endpoint, "api/digicert/"), "alice", key, old)
	if !strings.Contains(page, `<a href="/orders/`+renewed+`">Order `+renewed+`</a>`) {
		t.Errorf("the web page's chain lacks the renewal:\n%s", page)
	}

	audit := c.ok("admin", "audit", "--member", "alice", "--limit", "0")
	for _, want := range []string{" sync.added ", " sync.renewed ", " sync.status "} {
		if !strings.Contains(audit, want) {
			t.Errorf("the audit trail lacks %s", want)
		}
	}
	c.ok("admin", "member", "unlink", "alice", "--container", "10001")
	if !regexp.MustCompile(`(?m)^alice\s+enabled\s+on\s+\S+\s+-$`).MatchString(c.ok("admin", "member", "list")) {
		t.Error("unlink left the link")
	}
	c.fails(exitFailure, "admin", "member", "unlink", "alice", "--container", "10001")
}

// webOrderPage signs in on the web page and returns an order's page.
func webOrderPage(t *testing.T, base, name, key, id string) string {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar, Timeout: 10 * time.Second}
	get := func(path string) string {
		resp, err := hc.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	csrf := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(get("signin"))
	if csrf == nil {
		t.Fatal("no sign-in form")
	}
	resp, err := hc.PostForm(base+"signin", url.Values{"csrf": {csrf[1]}, "name": {name}, "key": {key}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return get("orders/" + id)
}

// What goes wrong says so clearly, with the right exit code, and never
// shows the key.
func TestSyncErrors(t *testing.T) {
	t.Parallel()
	u := newUpstream(t, digicerttest.Options{NoLimits: true})
	if _, err := u.sim.Generate(20, 1); err != nil {
		t.Fatal(err)
	}
	dsn := testdb.SQLite(t)
	c := syncCLI(t, dsn, u)
	delete(c.env, "CERTORDER_DIGICERT_API_KEY")
	if msg := c.fails(exitUsage, "sync"); !strings.Contains(msg, "CERTORDER_DIGICERT_API_KEY") {
		t.Errorf("no key: %s", msg)
	}
	keyFile := filepath.Join(t.TempDir(), "key")
	os.WriteFile(keyFile, []byte(simKey+"\n"), 0o600)
	c.sync("--digicert-api-key-file", keyFile)

	c.env["CERTORDER_DIGICERT_API_KEY"] = "wrong-key-d81f"
	out, errOut, err := c.run("", "sync")
	if exitCode(err) != exitFailure || !strings.Contains(err.Error(), "DigiCert refused the API key") ||
		!strings.HasPrefix(lastLine(out), "sync failed, cursor kept") || strings.Contains(out+errOut+err.Error(), "wrong-key-d81f") {
		t.Errorf("a wrong key: %v\n%s%s", err, out, errOut)
	}
	c.env["CERTORDER_DIGICERT_API_KEY"] = simKey
	c.fails(exitUsage, "sync", "--digicert-limits", "lots")
	c.fails(exitUsage, "sync", "extra")
	c.env["CERTORDER_DIGICERT_URL"] = "ftp://example.com/"
	c.fails(exitFailure, "sync")
	c.env["CERTORDER_DIGICERT_URL"] = u.url

	// Another sync holds the lock: exit 3, nothing done.
	store, err := stores.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	lock, ok, err := store.LockSync(context.Background())
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if msg := c.fails(exitBusy, "sync"); !strings.Contains(msg, "another sync is running") {
		t.Errorf("busy: %s", msg)
	}
	lock.Release()
	st := c.ok("admin", "sync", "status")
	if !strings.Contains(st, "failed") || !strings.Contains(st, "DigiCert refused the API key") {
		t.Errorf("sync status:\n%s", st)
	}
}

func TestParseLimits(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want []digicert.Limit
		ok   bool
	}{
		{"1000/3m,100/5s", digicert.DocumentedLimits(), true},
		{"off", nil, true},
		{" 50/1s ", []digicert.Limit{{Requests: 50, Per: time.Second}}, true},
		{"", nil, false},
		{"0/1s", nil, false},
		{"10/0s", nil, false},
		{"10", nil, false},
	} {
		got, err := parseLimits(tc.in)
		if (err == nil) != tc.ok || !slices.Equal(got, tc.want) {
			t.Errorf("parseLimits(%q) = %v, %v", tc.in, got, err)
		}
	}
}

func TestProgressLine(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	p := &progressLine{w: &b}
	p.show(ccsync.Progress{Phase: "fetching", Listed: 1000, Fetched: 250, ToFetch: 900, Requests: 260, LimiterWait: 3 * time.Minute})
	p.show(ccsync.Progress{Phase: "fetching", Listed: 1000, Fetched: 251, ToFetch: 900, Requests: 261}) // too soon: not drawn
	p.clear()
	want := "\r\033[Ksync: fetching; listed 1000, fetched 250 of 900, 260 requests, 3m0s waiting on the rate limit\r\033[K"
	if b.String() != want {
		t.Errorf("progress %q, want %q", b.String(), want)
	}
	var none *progressLine
	none.show(ccsync.Progress{})
	none.clear()
}

// --sync-max-fetches: a run that reaches it stores what it fetched, says
// so, exits 4 and keeps the cursor; admin sync status says it too; the
// next runs continue until one completes (12 orders, 5 a run: 3 runs).
func TestSyncMaxFetches(t *testing.T) {
	t.Parallel()
	u := newUpstream(t, digicerttest.Options{NoLimits: true})
	if _, err := u.sim.Generate(12, 1); err != nil {
		t.Fatal(err)
	}
	c := syncCLI(t, testdb.SQLite(t), u)
	c.fails(exitUsage, "sync", "--sync-max-fetches", "-1")
	for run := 1; ; run++ {
		out, errOut, err := c.run("", "sync", "--sync-max-fetches", "5")
		if run == 3 {
			if err != nil || count(t, lastLine(out), "fetched") != 2 {
				t.Fatalf("run 3: %v\n%s%s", err, out, errOut)
			}
			break
		}
		if exitCode(err) != exitIncomplete || !strings.HasPrefix(lastLine(out), "sync incomplete, cursor kept, the next run continues") ||
			count(t, lastLine(out), "fetched") != 5 {
			t.Fatalf("run %d: %v\n%s%s", run, err, out, errOut)
		}
		if st := c.ok("admin", "sync", "status"); !strings.Contains(st, "cursor: none") || !strings.Contains(st, ", incomplete, by ") {
			t.Fatalf("admin sync status after run %d:\n%s", run, st)
		}
	}
	if st := c.ok("admin", "sync", "status"); strings.Contains(st, "cursor: none") {
		t.Fatalf("admin sync status after the complete run:\n%s", st)
	}
}
