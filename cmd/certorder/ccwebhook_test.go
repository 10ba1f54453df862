package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/certorder/certorder/digicert"
	"github.com/certorder/certorder/digicert/digicerttest"
	"github.com/certorder/certorder/internal/poll"
	"github.com/certorder/certorder/internal/testdb"
)

// ccSecret is the CertCentral webhook's secret in these tests: no output,
// log or audit entry may show it.
const ccSecret = "cc-webhook-secret-4f1e9a7b2c6d8e0f13579bdf"

// ccSetup is a store synced from a simulator with the example data set
// and one order more in Acme's division (to renew), member acme-corp
// linked to Acme's division with an API key and a webhook endpoint (the
// member's receiver), and the files serve reads.
type ccSetup struct {
	u                   *upstream
	c                   *cli
	dsn, key            string
	rc                  *receiver
	secretFile, keyFile string
	renewable           int64
}

func newCCSetup(t *testing.T, dsn string) *ccSetup {
	t.Helper()
	s := &ccSetup{u: newUpstream(t, digicerttest.Options{}), dsn: dsn}
	s.u.sim.AddExample()
	id, err := s.u.sim.AddOrder(digicerttest.OrderSpec{ContainerID: digicerttest.ExampleAcme, CommonName: "renew.acme.example"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.u.sim.Issue(id, time.Now().Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	s.renewable = id
	s.c = syncCLI(t, dsn, s.u)
	s.c.ok("admin", "member", "add", "acme-corp")
	s.c.ok("admin", "member", "link", "acme-corp", "--container", fmt.Sprint(digicerttest.ExampleAcme))
	s.c.sync()
	s.key = lastLine(s.c.ok("admin", "key", "create", "acme-corp"))
	s.rc = newReceiver(t)
	s.rc.addEndpoint(s.c, "acme-corp")
	dir := t.TempDir()
	s.secretFile, s.keyFile = filepath.Join(dir, "cc-secret"), filepath.Join(dir, "dc-key")
	if err := os.WriteFile(s.secretFile, []byte(ccSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.keyFile, []byte(simKey), 0o600); err != nil {
		t.Fatal(err)
	}
	return s
}

// serveArgs are serve's flags with the receiver on and the poll hourly.
func (s *ccSetup) serveArgs(metricsAddr string) []string {
	return []string{"--db", s.dsn, "--metrics-addr", metricsAddr, "--sync-every", "1h", "--digicert-url", s.u.url,
		"--digicert-api-key-file", s.keyFile, "--certcentral-webhook-secret-file", s.secretFile, "--webhook-allow-private"}
}

// webhookURL is the receiver's URL of a serve whose API endpoint is given.
func webhookURL(endpoint string) string {
	return strings.TrimSuffix(endpoint, "api/digicert/") + "certcentral/webhook"
}

// postEvent sends body to a receiver with the key (none when "").
func postEvent(t *testing.T, method, url, key, body string) int {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("X-WEBHOOK-KEY", key)
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 400 && len(b) > 0 {
		t.Errorf("%s %s answered %d with a body: %q", method, url, resp.StatusCode, b)
	}
	return resp.StatusCode
}

// within asserts that cond holds within 5 s of start, the issue's bound
// from DigiCert's event to the members.
func within(t *testing.T, start time.Time, what string, cond func() bool) {
	t.Helper()
	poll.Until(t, 30*time.Second, what, cond)
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("%s took %v, over 5 s", what, took)
	} else {
		t.Logf("%s: %v", what, took.Round(time.Millisecond))
	}
}

// eventsFor are the member's webhook events of a type for an order.
func (s *ccSetup) eventsFor(typ string, order int64) int {
	s.rc.mu.Lock()
	defer s.rc.mu.Unlock()
	n := 0
	for _, r := range s.rc.got {
		if id, _ := r.data["order_id"].(float64); r.typ == typ && int64(id) == order {
			n++
		}
	}
	return n
}

// burst rejects order 100007 in the simulator, which sends its event to
// the registered receiver, and sends 49 copies of that event at once to
// the receivers at hooks, in turn. Within 5 s every serve at endpoints
// answers the change; once the workers have gone round, the burst made at
// most 5 Order info requests, no 429, and one member event.
func (s *ccSetup) burst(t *testing.T, hooks, endpoints, metricsAddrs []string) {
	t.Helper()
	const order = 100007
	s.u.sim.ResetCounts()
	start := time.Now()
	if err := s.u.sim.SetStatus(order, "rejected", start); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 49 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := fmt.Sprintf(`{"event":"order_rejected","data":{"order_id":%d,"certificate_id":500007}}`, order)
			if code := postEvent(t, "POST", hooks[i%len(hooks)], ccSecret, body); code != 200 {
				t.Errorf("a copy: %d", code)
			}
		}()
	}
	wg.Wait()
	within(t, start, "the burst's change at the API", func() bool {
		for _, e := range endpoints {
			if !s.answers(t, e, "OrderInfo", order, `"status":"rejected"`) {
				return false
			}
		}
		return s.eventsFor("order.status_changed", order) == 1
	})
	for _, worker := range []string{"certcentral", "webhooks"} {
		for _, addr := range metricsAddrs {
			awaitRounds(t, addr, worker)
		}
	}
	n := s.u.sim.Requests()[digicerttest.EndpointOrderInfo]
	t.Logf("the burst of 50 made %d Order info requests", n)
	if n > 5 {
		t.Errorf("the burst made %d Order info requests, over 5", n)
	}
	if v := s.u.sim.Violations(); len(v) > 0 {
		t.Errorf("CertCentral's rate limits broken: %v", v)
	}
	if n := s.eventsFor("order.status_changed", order); n != 1 {
		t.Errorf("the burst made %d member events, want 1", n)
	}
}

// answers reports whether the member's API answers action for order with
// a body matching re.
func (s *ccSetup) answers(t *testing.T, endpoint, action string, order int64, re string) bool {
	code, body := post(t, endpoint, request("acme-corp", s.key, action, fmt.Sprint(order)))
	return code == 200 && regexp.MustCompile(re).MatchString(body)
}

// The issue's "done when", on SQLite: with the poll hourly, a
// revocation, a reissue and a renewal made in the simulator reach the API
// and the member's webhook receiver within 5 s of the simulator's event,
// through serve's receiver; the registration leaves the webhook active;
// forged, oversized, malformed and repeated events change nothing, the
// forged ones reach nothing upstream; a burst of 50 copies of one event
// costs at most 5 Order info requests, no 429, one member event; the
// secret shows nowhere.
func TestCertCentralWebhook(t *testing.T) {
	if testing.Short() {
		t.Skip("over 5 s (the worker's rounds, a burst of 50 events): not with -short")
	}
	t.Parallel()
	s := newCCSetup(t, testdb.SQLite(t))
	metricsAddr := freeAddr(t)
	log := &syncBuffer{}
	endpoint, _ := startServeWith(t, s.c, log, s.serveArgs(metricsAddr)...)
	hook := webhookURL(endpoint)
	var outputs []string

	out := s.c.ok("admin", "sync", "webhook", "register", "--endpoint", hook, "--secret-file", s.secretFile)
	outputs = append(outputs, out)
	for _, want := range []string{"webhook 1: created for " + hook, "test event: certorder recorded it",
		"challenge: certorder received the token", "challenge: completed", "webhook 1: active"} {
		if !strings.Contains(out, want) {
			t.Errorf("register's output lacks %q:\n%s", want, out)
		}
	}
	if wh, ok := s.u.sim.Webhook(); !ok || wh.Status != digicert.WebhookActive || wh.Endpoint != hook ||
		wh.Settings.InstantIssue != "1" || strings.Join(wh.Events, ",") != strings.Join(digicert.OrderEvents, ",") {
		t.Fatalf("the simulator's webhook after register: %v %+v", wh, wh.Settings)
	}
	// Registering again updates the one webhook, verified anew.
	out = s.c.ok("admin", "sync", "webhook", "register", "--endpoint", hook, "--secret-file", s.secretFile)
	outputs = append(outputs, out)
	if !strings.Contains(out, "webhook 1: updated for "+hook) || !strings.Contains(out, "webhook 1: active") {
		t.Errorf("register again:\n%s", out)
	}

	// A revocation.
	const revoked = 100006
	start := time.Now()
	if err := s.u.sim.SetStatus(revoked, "revoked", start); err != nil {
		t.Fatal(err)
	}
	within(t, start, "the revocation at the API and the member's receiver", func() bool {
		return s.answers(t, endpoint, "OrderInfo", revoked, `"status":"revoked"`) && s.eventsFor("order.status_changed", revoked) == 1
	})

	// A reissue: CertCentral tells of it when the new certificate is issued.
	const reissued = 100002
	if _, err := s.u.sim.Reissue(reissued, time.Now()); err != nil {
		t.Fatal(err)
	}
	info, _ := s.u.sim.OrderInfo(reissued)
	start = time.Now()
	if err := s.u.sim.Issue(reissued, start); err != nil {
		t.Fatal(err)
	}
	serial := regexp.MustCompile(`"serial_number":"([0-9a-f]+)"`)
	newInfo, _ := s.u.sim.OrderInfo(reissued)
	newSerial := serial.FindSubmatch(newInfo)
	if newSerial == nil || serial.FindSubmatch(info) != nil {
		t.Fatalf("the simulator's reissue: %s", newInfo)
	}
	within(t, start, "the reissue at the API and the member's receiver", func() bool {
		return s.answers(t, endpoint, "OrderInfo", reissued, string(newSerial[1])) && s.eventsFor("order.reissued", reissued) == 1
	})

	// A renewal: CertCentral tells of it when the renewal's certificate is
	// issued; the order it renews comes with it.
	renewal, err := s.u.sim.Renew(s.renewable, 0, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	if err := s.u.sim.Issue(renewal, start); err != nil {
		t.Fatal(err)
	}
	within(t, start, "the renewal at RenewCheck and the member's receiver", func() bool {
		return s.answers(t, endpoint, "RenewCheck", s.renewable, fmt.Sprintf(`"renewed_orderId":%d\b`, renewal)) &&
			s.eventsFor("order.renewed", s.renewable) == 1
	})

	// Forged, oversized, malformed, of another method: refused, nothing
	// asked of CertCentral, nothing changed.
	s.u.sim.ResetCounts()
	before := s.c.ok("admin", "order", "list", "acme-corp")
	forged := `{"event":"certificate_revoked","data":{"order_id":100007,"certificate_id":1}}`
	for _, c := range []struct {
		method, key, body string
		want              int
	}{
		{"POST", "", forged, 401},
		{"POST", "wrong-" + ccSecret, forged, 401},
		{"POST", ccSecret[:len(ccSecret)-1], forged, 401},
		{"POST", ccSecret, `{"event":"certificate_revoked","data":{"order_id":100007,"pad":"` + strings.Repeat("x", 70<<10) + `"}}`, 413},
		{"POST", ccSecret, `{"event":"certificate_revoked"`, 400},
		{"POST", ccSecret, `["certificate_revoked"]`, 400},
		{"POST", ccSecret, `{"event":7}`, 400},
		{"POST", ccSecret, `{"event":"certificate_revoked","data":{"order_id":"100007"}}`, 400},
		{"POST", ccSecret, `{"event":"certificate_revoked","data":{}}`, 400},
		{"GET", ccSecret, "", 405},
		{"PUT", ccSecret, forged, 405},
		{"POST", ccSecret, `{"event":"domain_validated","data":{"domain_id":1}}`, 200},
		{"POST", ccSecret, `{"event":"something_new"}`, 200},
		{"POST", ccSecret, `{"event":"test_webhook_endpoint"}`, 200},
	} {
		if got := postEvent(t, c.method, hook, c.key, c.body); got != c.want {
			t.Errorf("%s %.60q with key %v: %d, want %d", c.method, c.body, c.key != "", got, c.want)
		}
	}
	awaitRounds(t, metricsAddr, "certcentral")
	if n := s.u.requests(); n != 0 {
		t.Errorf("the refused events made %d requests to CertCentral", n)
	}
	if after := s.c.ok("admin", "order", "list", "acme-corp"); after != before {
		t.Errorf("the refused events changed the orders:\n%s\n%s", before, after)
	}
	metrics := httpGet(t, "http://"+metricsAddr+"/metrics")
	for _, want := range []string{
		`certorder_certcentral_webhook_events_total{event="none",outcome="refused"} 3`,
		`certorder_certcentral_webhook_events_total{event="none",outcome="invalid"} 7`,
		`certorder_certcentral_webhook_events_total{event="certificate_revoked",outcome="invalid"} 1`,
		`certorder_certcentral_webhook_events_total{event="other",outcome="ignored"} 1`,
		`certorder_certcentral_webhook_events_total{event="domain_validated",outcome="ignored"} 1`,
		`certorder_certcentral_webhook_events_total{event="challenge_webhook_endpoint",outcome="applied"} 2`,
		`certorder_certcentral_webhook_events_total{event="certificate_issued",outcome="applied"} 2`,
		`certorder_certcentral_webhook_apply_seconds_count 3`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	// A burst: the simulator's event and 49 copies of it at once.
	s.burst(t, []string{hook}, []string{endpoint}, []string{metricsAddr})

	// The answer does not wait for CertCentral, however slow.
	s.u.sim.SetDelay(3 * time.Second)
	start = time.Now()
	if code := postEvent(t, "POST", hook, ccSecret, `{"event":"certificate_issued","data":{"order_id":100009}}`); code != 200 {
		t.Errorf("an event while CertCentral is slow: %d", code)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("the receiver took %v to answer while CertCentral was slow", took)
	}
	s.u.sim.SetDelay(0)

	// What the operator sees.
	status := s.c.ok("admin", "sync", "webhook", "status")
	outputs = append(outputs, status)
	for _, want := range []string{"webhook 1: active", "endpoint: " + hook, "events: certificate_issued, certificate_revoked, order_rejected",
		"certificate_issued for instant issues: on", "challenge_webhook_endpoint",
		"certcentral webhook: last event certificate_issued for order 100009"} {
		if !strings.Contains(status, want) {
			t.Errorf("webhook status lacks %q:\n%s", want, status)
		}
	}
	for _, re := range []string{`certificate_revoked\s+100006\s+200 success\s+received \S+, applied`,
		`order_rejected\s+100007\s+200 success\s+received \S+, applied`} {
		if !regexp.MustCompile(re).MatchString(status) {
			t.Errorf("webhook status does not show %s:\n%s", re, status)
		}
	}
	st := s.c.ok("admin", "sync", "status")
	outputs = append(outputs, st, s.c.ok("admin", "sync", "webhook", "test"), s.c.ok("admin", "audit", "--limit", "1000"), metrics)
	if !strings.Contains(st, "certcentral webhook: last event certificate_issued for order 100009, received ") {
		t.Errorf("sync status lacks the last event:\n%s", st)
	}
	for _, o := range append(outputs, log.String()) {
		if strings.Contains(o, ccSecret) || strings.Contains(o, simKey) {
			t.Fatalf("a secret shows in:\n%s", o)
		}
	}
}

// On PostgreSQL with two instances: the simulator's events reach one, the
// other answers the API with them; a burst of copies sent to both is
// applied once (one member event, at most 5 Order info requests, no 429).
func TestCertCentralWebhookTwoInstances(t *testing.T) {
	t.Parallel()
	s := newCCSetup(t, testdb.Postgres(t))
	bin := buildBinary(t)
	var procs []*process
	var metricsAddrs []string
	for range 2 {
		addr := freeAddr(t)
		procs = append(procs, startProcess(t, bin, append([]string{"serve", "--addr", "127.0.0.1:0"}, s.serveArgs(addr)...)...))
		metricsAddrs = append(metricsAddrs, addr)
	}
	a, b := procs[0], procs[1]
	out := s.c.ok("admin", "sync", "webhook", "register", "--endpoint", webhookURL(a.endpoint), "--secret-file", s.secretFile)
	if !strings.Contains(out, "webhook 1: active") {
		t.Fatalf("register:\n%s", out)
	}

	start := time.Now()
	if err := s.u.sim.SetStatus(100006, "revoked", start); err != nil {
		t.Fatal(err)
	}
	within(t, start, "the revocation at the other instance's API and the member's receiver", func() bool {
		return s.answers(t, b.endpoint, "OrderInfo", 100006, `"status":"revoked"`) && s.eventsFor("order.status_changed", 100006) == 1
	})

	// Copies sent to both instances.
	s.burst(t, []string{webhookURL(a.endpoint), webhookURL(b.endpoint)}, []string{a.endpoint, b.endpoint}, metricsAddrs)
	for _, p := range procs {
		if l := p.log.String(); strings.Contains(l, ccSecret) || strings.Contains(l, simKey) {
			t.Fatalf("a secret in the log:\n%s", l)
		}
	}
}

// The poll counts a change of status it found that no event announced
// (certorder_certcentral_webhook_missed_total): a revocation made before
// the webhook was registered is one; a rejection CertCentral announced,
// and a cancellation (no event tells of those), are not.
func TestCertCentralWebhookMissed(t *testing.T) {
	t.Parallel()
	s := newCCSetup(t, testdb.SQLite(t))
	metricsAddr := freeAddr(t)
	args := s.serveArgs(metricsAddr)
	args[5] = "200ms" // --sync-every
	endpoint, _ := startServe(t, s.c, args...)
	missed := func() float64 { return scrape(t, metricsAddr, "certorder_certcentral_webhook_missed_total") }
	if err := s.u.sim.SetStatus(100006, "revoked", time.Now()); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 30*time.Second, "the poll's revocation counted as missed", func() bool { return missed() == 1 })

	s.c.ok("admin", "sync", "webhook", "register", "--endpoint", webhookURL(endpoint), "--secret-file", s.secretFile)
	if err := s.u.sim.SetStatus(100007, "rejected", time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := s.u.sim.SetStatus(100009, "canceled", time.Now()); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 30*time.Second, "the rejection applied", func() bool {
		return s.answers(t, endpoint, "OrderInfo", 100007, `"status":"rejected"`)
	})
	// Two polls since: whatever they found is counted by now.
	runs := len(syncState(t, s.dsn).Runs)
	poll.Until(t, 30*time.Second, "two more polls", func() bool { return len(syncState(t, s.dsn).Runs) >= runs+2 })
	if n := missed(); n != 1 {
		t.Errorf("missed %v, want 1", n)
	}
}

// The flags are checked before anything is opened or asked of CertCentral:
// a short secret, an http endpoint off loopback, a bad CIDR, an allow-list
// without the receiver are usage errors (exit 2) that never show the secret.
func TestCertCentralWebhookFlags(t *testing.T) {
	t.Parallel()
	u := newUpstream(t, digicerttest.Options{})
	c := syncCLI(t, testdb.SQLite(t), u)
	dir := t.TempDir()
	short := filepath.Join(dir, "short")
	os.WriteFile(short, []byte("only-31-characters-long-secret!"), 0o600)
	good := filepath.Join(dir, "good")
	os.WriteFile(good, []byte(ccSecret), 0o644)
	for _, args := range [][]string{
		{"admin", "sync", "webhook"},
		{"admin", "sync", "webhook", "register"},
		{"admin", "sync", "webhook", "register", "--endpoint", "https://certorder.example/certcentral/webhook"},
		{"admin", "sync", "webhook", "register", "--endpoint", "http://certorder.example/certcentral/webhook", "--secret-file", good},
		{"admin", "sync", "webhook", "register", "--endpoint", "https://certorder.example/certcentral/webhook", "--secret-file", short},
		{"admin", "sync", "webhook", "register", "--endpoint", "https://certorder.example/certcentral/webhook", "--secret-file", filepath.Join(dir, "none")},
		{"serve", "--certcentral-webhook-secret-file", short, "--digicert-url", u.url},
		{"serve", "--certcentral-webhook-secret-file", good, "--certcentral-webhook-allow", "216.168.240.0/33"},
		{"serve", "--certcentral-webhook-allow", "216.168.240.0/20"},
	} {
		if out := c.fails(exitUsage, args...); strings.Contains(out, ccSecret) {
			t.Errorf("%q shows the secret: %s", args, out)
		}
	}
	if n := u.requests(); n != 0 {
		t.Errorf("%d requests to CertCentral", n)
	}
	// A secret file others may read is warned about, as the other key files are.
	_, errOut, _ := c.run("", "admin", "sync", "webhook", "register", "--endpoint", "http://127.0.0.1:1/certcentral/webhook", "--secret-file", good)
	if !strings.Contains(errOut, "readable by every user") || strings.Contains(errOut, ccSecret) {
		t.Errorf("no warning about a world-readable secret file: %q", errOut)
	}
}

// docs/SYNC.md's "Try the webhook" works as written: after the store is
// synced as "Try it" leaves it, its commands (serve on a free port, the
// secret file in a temporary directory) print the lines it shows, and the
// order dev simulate then revokes is revoked in admin order show within
// 5 s, the poll hourly: the event arrived by itself.
func TestTryWebhookSection(t *testing.T) {
	t.Parallel()
	section := docSection(t, "../../docs/SYNC.md", "CertCentral's webhook")
	_, try, ok := strings.Cut(section, "\n### Try the webhook\n")
	sh, text := codeBlocks(try, "sh"), codeBlocks(try, "text")
	if !ok || len(sh) != 1 || len(text) != 1 {
		t.Fatalf("want a subsection Try the webhook with one sh block and one text block, got %d and %d", len(sh), len(text))
	}
	s := newCCSetup(t, testdb.SQLite(t))
	dir := t.TempDir()
	var output strings.Builder
	endpoint := ""
	changed := "" // the status dev simulate gave an order, until a command shows it
	var simulated time.Time
	for _, line := range strings.Split(strings.TrimSpace(sh[0]), "\n") {
		line, _, _ = strings.Cut(line, "  #") // a comment
		args := strings.Fields(line)
		switch {
		case strings.HasPrefix(line, "head -c 36 /dev/urandom | base64 > "):
			os.WriteFile(filepath.Join(dir, args[len(args)-1]), []byte(ccSecret), 0o600)
		case args[0] == "certorder" && args[1] == "serve" && args[len(args)-1] == "&":
			args = append(args[2:len(args)-1], "--db", s.dsn, "--digicert-url", s.u.url, "--digicert-api-key-file", s.keyFile)
			for i := range args {
				if strings.HasSuffix(args[i], ".secret") {
					args[i] = filepath.Join(dir, args[i])
				}
			}
			endpoint, _ = startServe(t, s.c, args...)
		case args[0] == "certorder":
			for i := range args {
				if strings.HasSuffix(args[i], ".secret") {
					args[i] = filepath.Join(dir, args[i])
				}
				if strings.HasPrefix(args[i], "http://127.0.0.1:8080/") {
					args[i] = webhookURL(endpoint)
				}
			}
			if changed == "" {
				simulated = time.Now()
				out := s.c.ok(args[1:]...)
				output.WriteString(out)
				if m := regexp.MustCompile(`^order \d+: (\w+),`).FindStringSubmatch(out); len(args) > 2 && args[2] == "simulate" && m != nil {
					changed = m[1]
				}
				break
			}
			// The command after dev simulate, which shows the change
			// once serve has received and applied its event.
			out := ""
			within(t, simulated, "the change at "+strings.Join(args, " "), func() bool {
				out = s.c.ok(args[1:]...)
				return strings.Contains(out, "Status:       "+changed+"\n")
			})
			output.WriteString(out)
			changed = ""
		default:
			t.Fatalf("%q is not a line the test knows", line)
		}
	}
	if changed != "" {
		t.Errorf("no command after dev simulate shows the change")
	}
	got := withoutToday(output.String())
	for _, line := range strings.Split(strings.TrimSpace(text[0]), "\n") {
		if want := withoutToday(strings.ReplaceAll(line, "http://127.0.0.1:8080/certcentral/webhook", webhookURL(endpoint))); !strings.Contains(got, want+"\n") {
			t.Errorf("no line %q in what the commands printed:\n%s", want, got)
		}
	}
	// It came by the webhook: the simulator sent the event, and serve took it.
	var sent []string
	for _, d := range s.u.sim.WebhookDeliveries() {
		if d.OrderID != 0 {
			sent = append(sent, fmt.Sprintf("%s %d %d", d.Event, d.OrderID, d.Status))
		}
	}
	if strings.Join(sent, ",") != "certificate_revoked 100006 200" {
		t.Errorf("the simulator's deliveries: %q, want the revocation of 100006 answered 200", sent)
	}
}
