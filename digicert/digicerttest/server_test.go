package digicerttest_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/certorder/certorder/digicert"
	"github.com/certorder/certorder/digicert/digicerttest"
)

const key = "sim-key"

var now = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

type sim struct {
	*digicerttest.Server
	clock *digicerttest.Clock
	url   string
}

func newSim(t *testing.T, opts digicerttest.Options) *sim {
	t.Helper()
	clock := digicerttest.NewClock(now)
	opts.APIKey, opts.Clock = key, clock
	s := digicerttest.NewServer(opts)
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return &sim{s, clock, ts.URL + digicerttest.BasePath}
}

// get calls the simulator over HTTP and decodes the answer.
func (s *sim) get(t *testing.T, path string, q url.Values, apiKey string) (int, map[string]any) {
	t.Helper()
	u := s.url + path
	if q != nil {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	if apiKey != "" {
		req.Header.Set("X-DC-DEVKEY", apiKey)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s: Content-Type %q", path, ct)
	}
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatalf("%s: answer is not a JSON object: %s", path, body)
	}
	return resp.StatusCode, doc
}

// errorCode returns the code of a documented error body.
func errorCode(t *testing.T, doc map[string]any) string {
	t.Helper()
	list, ok := doc["errors"].([]any)
	if !ok || len(list) != 1 {
		t.Fatalf("not the documented error body: %v", doc)
	}
	item := list[0].(map[string]any)
	if _, ok := item["message"].(string); !ok {
		t.Fatalf("error without a message: %v", doc)
	}
	return item["code"].(string)
}

func TestAuthAndRoutes(t *testing.T) {
	t.Parallel()
	s := newSim(t, digicerttest.Options{})
	for _, k := range []string{"", "wrong"} {
		status, doc := s.get(t, "order/certificate", nil, k)
		if status != http.StatusUnauthorized || errorCode(t, doc) != "invalid_api_key" {
			t.Errorf("key %q: %d %v", k, status, doc)
		}
	}
	s.SetWrongKeyStatus(http.StatusForbidden)
	if status, doc := s.get(t, "order/certificate", nil, "wrong"); status != 403 || errorCode(t, doc) != "access_denied|missing_permission" {
		t.Errorf("403 mode: %d %v", status, doc)
	}
	if status, doc := s.get(t, "no/such/route", nil, key); status != 404 || errorCode(t, doc) != "not_found|route" {
		t.Errorf("unknown route: %d %v", status, doc)
	}
	if status, doc := s.get(t, "order/certificate/123", nil, key); status != 404 || errorCode(t, doc) != "not_found|order" {
		t.Errorf("unknown order: %d %v", status, doc)
	}
	got := s.Requests()
	if got[digicerttest.EndpointListOrders] != 3 || got[digicerttest.EndpointOther] != 1 || got[digicerttest.EndpointOrderInfo] != 1 {
		t.Errorf("requests by endpoint %v", got)
	}
}

func TestOrderLifecycle(t *testing.T) {
	t.Parallel()
	s := newSim(t, digicerttest.Options{})
	s.AddContainer(5, "Science")
	id, err := s.AddOrder(digicerttest.OrderSpec{ContainerID: 5, CommonName: "lab.example.edu"})
	if err != nil {
		t.Fatal(err)
	}
	_, doc := s.get(t, "order/certificate/"+itoa(id), nil, key)
	cert := doc["certificate"].(map[string]any)
	if doc["status"] != "pending" || cert["valid_till"] != nil || cert["date_issued"] != nil {
		t.Errorf("a new order is pending without certificate dates: %v", doc)
	}
	if status, _ := s.get(t, "order/certificate/status-changes", url.Values{"minutes": {"60"}}, key); status != 200 {
		t.Fatal(status)
	}

	issuedAt := now.Add(-10 * time.Minute)
	if err := s.Issue(id, issuedAt); err != nil {
		t.Fatal(err)
	}
	_, doc = s.get(t, "order/certificate/"+itoa(id), nil, key)
	cert = doc["certificate"].(map[string]any)
	if doc["status"] != "issued" || cert["date_issued"] != "2026-06-01T11:50:00+00:00" || cert["valid_till"] != "2026-12-17" ||
		cert["days_remaining"] != float64(199) || doc["order_valid_till"] != "2027-06-01" || doc["container"].(map[string]any)["name"] != "Science" {
		t.Errorf("issued order: %v", doc)
	}
	// Order info by thumbprint and by serial number, as documented.
	for _, k := range []string{"thumbprint", "serial_number"} {
		_, byCert := s.get(t, "order/certificate/"+cert[k].(string), nil, key)
		if byCert["id"] != float64(id) {
			t.Errorf("order info by %s: %v", k, byCert["id"])
		}
	}

	s.clock.Advance(time.Hour)
	renewal, err := s.Renew(id, 6, s.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	_, old := s.get(t, "order/certificate/"+itoa(id), nil, key)
	_, fresh := s.get(t, "order/certificate/"+itoa(renewal), nil, key)
	if old["is_renewed"] != true || old["renewed_order_id"] != float64(renewal) || old["status"] != "issued" {
		t.Errorf("renewed order: %v %v %v", old["is_renewed"], old["renewed_order_id"], old["status"])
	}
	if fresh["is_renewal"] != true || fresh["status"] != "pending" || fresh["container"].(map[string]any)["id"] != float64(6) {
		t.Errorf("renewal order: %v", fresh)
	}
	if _, err := s.Renew(id, 0, s.clock.Now()); err == nil {
		t.Error("an order was renewed twice")
	}
	// The renewal changed no status: the last 30 minutes list nothing.
	_, changes := s.get(t, "order/certificate/status-changes", url.Values{"minutes": {"30"}}, key)
	if list := changes["orders"].([]any); len(list) != 0 {
		t.Errorf("a renewal showed as a status change: %v", list)
	}
	_, changes = s.get(t, "order/certificate/status-changes", url.Values{"minutes": {"90"}}, key)
	if list := changes["orders"].([]any); len(list) != 1 || list[0].(map[string]any)["order_id"] != float64(id) {
		t.Errorf("the issue 70 minutes ago: %v", changes)
	}

	_, list := s.get(t, "order/certificate", url.Values{"filters[is_renewed]": {"1"}}, key)
	if orders := list["orders"].([]any); len(orders) != 1 || orders[0].(map[string]any)["id"] != float64(id) {
		t.Errorf("is_renewed=1: %v", list)
	}
	if page := list["page"].(map[string]any); page["total"] != float64(1) || page["limit"] != float64(1000) {
		t.Errorf("page: %v", page)
	}

	for _, bad := range []func() error{
		func() error { return s.Issue(999, now) },
		func() error { return s.SetStatus(999, "issued", now) },
		func() error { return s.SetStatus(id, "", now) },
		func() error { _, err := s.Renew(999, 0, now); return err },
		func() error { _, err := s.AddOrder(digicerttest.OrderSpec{ProductNameID: "nope"}); return err },
	} {
		if bad() == nil {
			t.Error("a bad change was accepted")
		}
	}
}

func TestStatusChangeWindow(t *testing.T) {
	t.Parallel()
	s := newSim(t, digicerttest.Options{NoLimits: true})
	tests := []struct {
		q      url.Values
		status int
		code   string
	}{
		{url.Values{"minutes": {"10080"}}, 200, ""},
		{url.Values{"seconds": {"604800"}}, 200, ""},
		{url.Values{"minutes": {"10079"}, "seconds": {"60"}}, 200, ""},
		{url.Values{"minutes": {"10080"}, "seconds": {"1"}}, 400, "time_frame_too_long"},
		{url.Values{"seconds": {"604801"}}, 400, "time_frame_too_long"},
		{url.Values{"minutes": {"10081"}}, 400, "time_frame_too_long"},
		{url.Values{"filters[status_last_updated]": {"2026-01-01...2026-01-07"}}, 200, ""},
		{url.Values{"filters[status_last_updated]": {"2026-01-01 10:00:00...2026-01-08 10:00:00"}}, 200, ""},
		{url.Values{"filters[status_last_updated]": {"2026-01-01 10:00:00...2026-01-08 10:00:01"}}, 400, "time_frame_too_long"},
		{url.Values{"filters[status_last_updated]": {"2026-01-01...2026-01-08"}}, 400, "time_frame_too_long"},
		{url.Values{"filters[status_last_updated]": {"01/01/2026...2026-01-02"}}, 400, "invalid_filter|status_last_updated"},
		{url.Values{}, 400, "missing_time_frame"},
	}
	for _, tt := range tests {
		status, doc := s.get(t, "order/certificate/status-changes", tt.q, key)
		if status != tt.status {
			t.Errorf("%v: HTTP %d, want %d (%v)", tt.q, status, tt.status, doc)
			continue
		}
		if tt.code != "" && errorCode(t, doc) != tt.code {
			t.Errorf("%v: code %s, want %s", tt.q, errorCode(t, doc), tt.code)
		}
	}
}

// TestDateRangeReadsMountainTime: a change at 06:30 UTC is 00:30 MDT.
func TestDateRangeReadsMountainTime(t *testing.T) {
	t.Parallel()
	s := newSim(t, digicerttest.Options{NoLimits: true})
	id, _ := s.AddOrder(digicerttest.OrderSpec{Created: now.Add(-72 * time.Hour)})
	if err := s.SetStatus(id, "rejected", time.Date(2026, 5, 30, 6, 30, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	for r, want := range map[string]int{
		"2026-05-30 00:00:00...2026-05-30 01:00:00": 1,
		"2026-05-30 06:00:00...2026-05-30 07:00:00": 0,
		"2026-05-29...2026-05-29":                   0,
		"2026-05-30...2026-05-30":                   1,
	} {
		_, doc := s.get(t, "order/certificate/status-changes", url.Values{"filters[status_last_updated]": {r}}, key)
		if got := len(doc["orders"].([]any)); got != want {
			t.Errorf("%s: %d orders, want %d", r, got, want)
		}
	}
	// The client's rendering of a range is what the simulator reads.
	r := digicert.DateRange(time.Date(2026, 5, 30, 6, 29, 0, 0, time.UTC), time.Date(2026, 5, 30, 6, 31, 0, 0, time.UTC))
	_, doc := s.get(t, "order/certificate/status-changes", url.Values{"filters[status_last_updated]": {r}}, key)
	if got := len(doc["orders"].([]any)); got != 1 {
		t.Errorf("DateRange %s: %d orders, want 1", r, got)
	}
}

func TestRateLimitsRecorded(t *testing.T) {
	t.Parallel()
	s := newSim(t, digicerttest.Options{Limits: []digicert.Limit{{Requests: 3, Per: time.Second}}})
	codes := []int{}
	for range 5 {
		status, _ := s.get(t, "order/certificate", nil, key)
		codes = append(codes, status)
	}
	if want := []int{200, 200, 200, 429, 429}; !slices.Equal(codes, want) {
		t.Errorf("statuses %v, want %v", codes, want)
	}
	if v := s.Violations(); len(v) != 2 || v[0].InWindow != 3 || v[0].Limit.Requests != 3 {
		t.Errorf("violations %+v", v)
	}
	s.clock.Advance(time.Second) // the rolling window has passed
	if status, _ := s.get(t, "order/certificate", nil, key); status != 200 {
		t.Errorf("after the window: %d", status)
	}
	// A wrong key does not count against the key's limits.
	for range 5 {
		s.get(t, "order/certificate", nil, "wrong")
	}
	if len(s.Violations()) != 2 {
		t.Errorf("wrong-key requests counted: %d violations", len(s.Violations()))
	}
	s.ResetCounts()
	if len(s.Violations()) != 0 || len(s.Requests()) != 0 {
		t.Error("ResetCounts kept counts")
	}
}

func TestInjectedFailures(t *testing.T) {
	t.Parallel()
	s := newSim(t, digicerttest.Options{})
	s.FailNext(2, http.StatusTooManyRequests)
	s.FailNext(1, http.StatusBadGateway)
	var got []string
	for range 4 {
		status, doc := s.get(t, "order/certificate", nil, key)
		code := "ok"
		if status != 200 {
			code = errorCode(t, doc)
		}
		got = append(got, itoa(int64(status))+" "+code)
	}
	want := []string{"429 request_limit_exceeded", "429 request_limit_exceeded", "502 server_error", "200 ok"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("answers %v, want %v", got, want)
	}
	if len(s.Violations()) != 0 {
		t.Error("injected 429s were recorded as violations")
	}
}

func TestGenerateIsDeterministic(t *testing.T) {
	t.Parallel()
	render := func(seed int64) []byte {
		s := newSim(t, digicerttest.Options{})
		g, err := s.Generate(3000, seed)
		if err != nil {
			t.Fatal(err)
		}
		if g.Orders != 3000 || g.Containers != 3 || g.Renewals < 500 || g.CrossContainer < 50 || g.Pending == 0 {
			t.Errorf("generated %+v", g)
		}
		var all bytes.Buffer
		for _, id := range s.OrderIDs() {
			raw, _ := s.OrderInfo(id)
			all.Write(raw)
		}
		return all.Bytes()
	}
	a, b, c := render(1), render(1), render(2)
	if !bytes.Equal(a, b) {
		t.Error("the same seed made different datasets")
	}
	if bytes.Equal(a, c) {
		t.Error("different seeds made the same dataset")
	}
	if _, err := newSim(t, digicerttest.Options{}).Generate(-1, 1); err == nil {
		t.Error("a negative count was accepted")
	}
}

func TestSlowAnswers(t *testing.T) {
	t.Parallel()
	s := newSim(t, digicerttest.Options{})
	s.SetDelay(120 * time.Millisecond)
	began := time.Now()
	if status, _ := s.get(t, "order/certificate", nil, key); status != 200 {
		t.Fatal(status)
	}
	if took := time.Since(began); took < 120*time.Millisecond {
		t.Errorf("answered in %v despite a 120ms delay", took)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// A multi-year plan holds several certificates: each issued for at most
// the day's maximum (199 days now) and never past the plan's end; a
// reissue keeps the order number, gives a new certificate ID and is
// reissue_pending (a status change) until issued, with a new serial.
func TestReissueInMultiYearPlan(t *testing.T) {
	s := newSim(t, digicerttest.Options{NoLimits: true})
	id, err := s.AddOrder(digicerttest.OrderSpec{ValidityYears: 3, CommonName: "plan.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Issue(id, now); err != nil {
		t.Fatal(err)
	}
	info := func() (map[string]any, map[string]any) {
		t.Helper()
		_, doc := s.get(t, "order/certificate/"+itoa(id), nil, key)
		return doc, doc["certificate"].(map[string]any)
	}
	doc, first := info()
	if doc["order_valid_till"] != "2029-06-01" || first["valid_till"] != "2026-12-17" || doc["validity_years"] != float64(3) {
		t.Fatalf("first certificate of a 3-year plan: plan to %v, certificate to %v", doc["order_valid_till"], first["valid_till"])
	}
	s.clock.Advance(150 * 24 * time.Hour) // 2026-10-29
	certID, err := s.Reissue(id, s.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	doc, pending := info()
	if doc["id"] != float64(id) || doc["status"] != "reissue_pending" || pending["id"] != float64(certID) || certID == int64(first["id"].(float64)) ||
		pending["serial_number"] != nil || pending["valid_till"] != nil {
		t.Fatalf("reissue pending: %v / %v", doc["status"], pending)
	}
	_, changes := s.get(t, "order/certificate/status-changes", url.Values{"minutes": {"5"}}, key)
	if !strings.Contains(fmtJSON(t, changes), `"status":"reissue_pending"`) {
		t.Errorf("the reissue is no status change: %v", changes)
	}
	if err := s.Issue(id, s.clock.Now()); err != nil {
		t.Fatal(err)
	}
	doc, second := info()
	if doc["status"] != "issued" || second["id"] != float64(certID) || second["serial_number"] == first["serial_number"] ||
		second["thumbprint"] == first["thumbprint"] || second["valid_from"] != "2026-10-29" || second["valid_till"] != "2027-05-16" {
		t.Fatalf("reissued: %v", second)
	}
	// Near the plan's end the certificate ends with the plan; after it, no reissue.
	s.clock.Advance(900 * 24 * time.Hour) // 2029-04-17: 47-day certificates
	if _, err := s.Reissue(id, s.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if err := s.Issue(id, s.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if _, last := info(); last["valid_till"] != "2029-06-01" {
		t.Errorf("last certificate of the plan ends %v, want the plan's end 2029-06-01", last["valid_till"])
	}
	s.clock.Advance(60 * 24 * time.Hour)
	if _, err := s.Reissue(id, s.clock.Now()); err == nil {
		t.Error("a reissue after the plan's end was accepted")
	}
	for at, want := range map[string]int{"2026-02-23": 397, "2026-02-24": 199, "2027-03-14": 199, "2027-03-15": 100, "2029-03-15": 47} {
		day, _ := time.Parse(time.DateOnly, at)
		if got := digicerttest.MaxCertificateDays(day); got != want {
			t.Errorf("MaxCertificateDays(%s) = %d, want %d", at, got, want)
		}
	}
}

func fmtJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
