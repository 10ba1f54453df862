package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/importfile"
	"github.com/certorder/certorder/internal/storekit"
	"github.com/certorder/certorder/internal/testdb"
	"github.com/certorder/certorder/server"
	"github.com/certorder/certorder/stores"
	"github.com/certorder/certorder/storetest"
)

// today is the test clock: days_remaining is counted from it.
var today = time.Date(2026, 1, 15, 13, 0, 0, 0, time.UTC)

type fixture struct {
	store             storekit.Store
	dbPath            string // the DSN; a file path on SQLite
	url               string // the endpoint
	aliceKey, bobKey  string
	revokedKey        string
	disabledMemberKey string
	handler           *server.Server
}

// openAndClose makes a new store at path (testdb.NewSQLite's template).
func openAndClose(path string) error {
	s, err := stores.Open(context.Background(), path)
	if err != nil {
		return err
	}
	return s.Close()
}

// newFixture starts the server on a fresh store (see testdb) with members alice
// (orders 1001 -> 1002 -> 1003 from testdata), bob (order 2001) and carol
// (disabled).
func newFixture(t testing.TB, dsn string, cfg server.Config) *fixture {
	t.Helper()
	ctx := context.Background()
	f := &fixture{dbPath: dsn}
	testdb.NewSQLite(t, dsn, openAndClose)
	s, err := stores.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	f.store = s
	key := func(member string) string {
		text, k, err := certorder.NewKey("")
		if err != nil {
			t.Fatal(err)
		}
		if err := s.AddKey(ctx, member, k); err != nil {
			t.Fatal(err)
		}
		return text
	}
	for _, m := range []string{"alice", "bob", "carol"} {
		if _, err := s.AddMember(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	f.aliceKey, f.bobKey, f.disabledMemberKey = key("alice"), key("bob"), key("carol")
	f.revokedKey = key("alice")
	id, _ := certorder.KeyID(f.revokedKey)
	if err := s.RevokeKey(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := s.SetMemberDisabled(ctx, "carol", true); err != nil {
		t.Fatal(err)
	}
	file, err := os.Open("testdata/orders.json")
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	if _, err := s.ImportOrders(ctx, "alice", importfile.Decode(file)); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordRenewal(ctx, 1002, 1003); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ImportOrders(ctx, "bob", storetest.Orders(t, storetest.OrderJSON(2001, 0, "2027-01-01"))); err != nil {
		t.Fatal(err)
	}

	if cfg.CASegment == "" {
		cfg.CASegment = "digicert"
	}
	if cfg.Now == nil {
		cfg.Now = func() time.Time { return today }
	}
	h, err := server.New(s, cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.handler = h
	srv := httptest.NewServer(h)
	t.Cleanup(func() { srv.Close(); h.Close() })
	f.url = srv.URL + "/api/" + cfg.CASegment + "/"
	return f
}

// post sends body to the endpoint and returns the status and the body.
func (f *fixture) post(t *testing.T, body string) (int, string) {
	t.Helper()
	return do(t, http.MethodPost, f.url, body)
}

func do(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
	return resp.StatusCode, strings.TrimSpace(string(b))
}

// body builds a request body from name/value pairs; values are raw JSON.
func body(pairs ...string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i := 0; i < len(pairs); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"` + pairs[i] + `":` + pairs[i+1])
	}
	b.WriteByte('}')
	return b.String()
}

func q(s string) string { b, _ := json.Marshal(s); return string(b) }

func (f *fixture) alice(action string, more ...string) string {
	return body(append([]string{"AccessName", `"alice"`, "AccessKey", q(f.aliceKey), "action", q(action)}, more...)...)
}

func TestActions(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, dsn string) {
		f := newFixture(t, dsn, server.Config{})
		for _, tc := range []struct {
			name, body, want string
		}{
			{"Auth", f.alice("Auth"), `{"message":"Authenticated"}`},
			{"RenewCheck from the document", f.alice("RenewCheck", "orderId", "1001"), `{"orderId":1001,"renewed_orderId":1002}`},
			{"RenewCheck from order renew", f.alice("RenewCheck", "orderId", `"1002"`), `{"orderId":1002,"renewed_orderId":1003}`},
			{"unknown fields ignored", f.alice("Auth", "extra", `[1,{"x":null}]`), `{"message":"Authenticated"}`},
		} {
			t.Run(tc.name, func(t *testing.T) {
				status, got := f.post(t, tc.body)
				if status != http.StatusOK || got != tc.want {
					t.Fatalf("got %d %s, want 200 %s", status, got, tc.want)
				}
			})
		}
		// The endpoint answers without the trailing slash too, rather than redirecting a POST.
		status, got := do(t, http.MethodPost, strings.TrimSuffix(f.url, "/"), f.alice("Auth"))
		if status != http.StatusOK || got != `{"message":"Authenticated"}` {
			t.Fatalf("without slash: %d %s", status, got)
		}
	})
}

func TestOrderInfoFidelity(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, dsn string) {
		f := newFixture(t, dsn, server.Config{})
		raw, err := os.ReadFile("testdata/orders.json")
		if err != nil {
			t.Fatal(err)
		}
		var imported []map[string]any
		decode(t, raw, &imported)

		for i, tc := range []struct {
			id        string
			days      int64
			renewedBy int64
		}{
			{"1001", -2206, 1002}, // valid till 2020-01-01, renewed in the document
			{"1002", 45, 1003},    // valid till 2026-03-01, renewed by order renew
			{"1003", 410, 0},      // valid till 2027-03-01, current
		} {
			t.Run(tc.id, func(t *testing.T) {
				status, got := f.post(t, f.alice("OrderInfo", "orderId", tc.id))
				if status != http.StatusOK {
					t.Fatalf("status %d: %s", status, got)
				}
				var answer map[string]any
				decode(t, []byte(got), &answer)
				want := imported[i]
				cert := answer["certificate"].(map[string]any)
				if cert["days_remaining"] != json.Number(itoa(tc.days)) {
					t.Errorf("days_remaining = %v, want %d", cert["days_remaining"], tc.days)
				}
				if (tc.renewedBy != 0) != answer["is_renewed"] {
					t.Errorf("is_renewed = %v", answer["is_renewed"])
				}
				if tc.renewedBy != 0 && answer["was_renewed_by_order_id"] != json.Number(itoa(tc.renewedBy)) {
					t.Errorf("was_renewed_by_order_id = %v, want %d", answer["was_renewed_by_order_id"], tc.renewedBy)
				}
				if _, ok := answer["was_renewed_by_order_id"]; tc.renewedBy == 0 && ok {
					t.Errorf("was_renewed_by_order_id present on an order not renewed")
				}
				// Everything else comes back exactly as imported, types included
				// (json.Number and string stay apart).
				for _, m := range []map[string]any{answer, want} {
					delete(m, "is_renewed")
					delete(m, "was_renewed_by_order_id")
					delete(m["certificate"].(map[string]any), "days_remaining")
				}
				if !reflect.DeepEqual(answer, want) {
					t.Errorf("answer differs from the import:\n got %v\nwant %v", answer, want)
				}
			})
		}
		// The spec's field names, as written.
		_, got := f.post(t, f.alice("OrderInfo", "orderId", "1001"))
		for _, s := range []string{`"OrderId":1001`, `"dns_names":["old.example.com","www.old.example.com"]`,
			`"user_id":31337`, `"receipt_id":"8800123"`, `"purchased_dns_names":"2"`, `"purchased_wildcard_names":null`} {
			if !strings.Contains(got, s) {
				t.Errorf("answer lacks %s: %s", s, got)
			}
		}
	})
}

func decode(t *testing.T, b []byte, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

// The failure answers as docs/API.md writes them: literals, so that a
// wrong text or number fails the tests.
const (
	e100 = `{"error_message":"Error(100) request is failed."}`
	e101 = `{"error_message":"Error(101) method is failed."}`
	e102 = `{"error_message":"Error(102) path is failed."}`
	e110 = `{"error_message":"Error(110) AccessName is failed."}`
	e111 = `{"error_message":"Error(111) AccessName is failed."}`
	e120 = `{"error_message":"Error(120) action is failed."}`
	e130 = `{"error_message":"Error(130) orderId is failed."}`
	e131 = `{"error_message":"Error(131) orderId is failed."}`
	e132 = `{"error_message":"Error(132) orderId is failed."}`
	e140 = `{"error_message":"Error(140) rate limit is exceeded."}`
	e150 = `{"error_message":"Error(150) service is unavailable."}`
	e190 = `{"error_message":"Error(190) internal error."}`
)

func TestBadRequests(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, dsn string) {
		f := newFixture(t, dsn, server.Config{})
		creds := func(name, key string) []string {
			return []string{"AccessName", name, "AccessKey", key}
		}
		alice := creds(`"alice"`, q(f.aliceKey))
		with := func(base []string, more ...string) string {
			return body(append(append([]string{}, base...), more...)...)
		}
		info := func(orderID string) string { return with(alice, "action", `"OrderInfo"`, "orderId", orderID) }
		otherKey, _, _ := certorder.NewKey("")

		for _, tc := range []struct {
			name, method, path, body string
			want                     string
			status                   int
		}{
			{name: "GET", method: http.MethodGet, want: e101, status: 405},
			{name: "PUT", method: http.MethodPut, body: f.alice("Auth"), want: e101, status: 405},
			{name: "unknown path", path: "/api/other/", body: f.alice("Auth"), want: e102, status: 404},
			{name: "root path", path: "/", body: f.alice("Auth"), want: e102, status: 404},
			{name: "empty body", want: e100, status: 400},
			{name: "not JSON", body: "AccessName=alice", want: e100, status: 400},
			{name: "array", body: `[` + f.alice("Auth") + `]`, want: e100, status: 400},
			{name: "string", body: `"Auth"`, want: e100, status: 400},
			{name: "null", body: `null`, want: e100, status: 400},
			{name: "truncated", body: `{"AccessName":"alice",`, want: e100, status: 400},
			{name: "trailing data", body: f.alice("Auth") + ` {}`, want: e100, status: 400},
			{name: "too large", body: f.alice("Auth", "pad", q(strings.Repeat("x", 20<<10))), want: e100, status: 413},
			{name: "empty object", body: `{}`, want: e110, status: 400},
			{name: "no AccessName", body: body("AccessKey", q(f.aliceKey), "action", `"Auth"`), want: e110, status: 400},
			{name: "no AccessKey", body: body("AccessName", `"alice"`, "action", `"Auth"`), want: e110, status: 400},
			{name: "AccessName a number", body: with(creds("7", q(f.aliceKey)), "action", `"Auth"`), want: e110, status: 400},
			{name: "AccessName null", body: with(creds("null", q(f.aliceKey)), "action", `"Auth"`), want: e110, status: 400},
			{name: "AccessKey empty", body: with(creds(`"alice"`, `""`), "action", `"Auth"`), want: e110, status: 400},
			{name: "names are case-sensitive", body: body("accessname", `"alice"`, "accesskey", q(f.aliceKey), "action", `"Auth"`), want: e110, status: 400},
			{name: "wrong key", body: with(creds(`"alice"`, q(otherKey)), "action", `"Auth"`), want: e111, status: 401},
			{name: "key of another shape", body: with(creds(`"alice"`, `"hunter2"`), "action", `"Auth"`), want: e111, status: 401},
			{name: "key with a tampered secret", body: with(creds(`"alice"`, q(f.aliceKey[:len(f.aliceKey)-1]+"x")), "action", `"Auth"`), want: e111, status: 401},
			{name: "unknown member", body: with(creds(`"mallory"`, q(f.aliceKey)), "action", `"Auth"`), want: e111, status: 401},
			{name: "NUL in the name", body: with(creds(`"ali\u0000ce"`, q(f.aliceKey)), "action", `"Auth"`), want: e111, status: 401},
			{name: "NUL in the key ID", body: with(creds(`"alice"`, `"cok_\u000023456789ab_x"`), "action", `"Auth"`), want: e111, status: 401},
			{name: "another member's name", body: with(creds(`"bob"`, q(f.aliceKey)), "action", `"Auth"`), want: e111, status: 401},
			{name: "revoked key", body: with(creds(`"alice"`, q(f.revokedKey)), "action", `"Auth"`), want: e111, status: 401},
			{name: "disabled member", body: with(creds(`"carol"`, q(f.disabledMemberKey)), "action", `"Auth"`), want: e111, status: 401},
			{name: "no action", body: with(alice), want: e120, status: 400},
			{name: "unknown action", body: with(alice, "action", `"Delete"`), want: e120, status: 400},
			{name: "action in the wrong case", body: with(alice, "action", `"orderinfo"`), want: e120, status: 400},
			{name: "action a number", body: with(alice, "action", `1`), want: e120, status: 400},
			{name: "orderId missing", body: with(alice, "action", `"OrderInfo"`), want: e130, status: 400},
			{name: "orderId zero", body: info("0"), want: e130, status: 400},
			{name: "orderId negative", body: info("-1001"), want: e130, status: 400},
			{name: "orderId fraction", body: info("1001.5"), want: e130, status: 400},
			{name: "orderId 1001.0", body: info("1001.0"), want: e130, status: 400},
			{name: "orderId exponent", body: info("1.001e3"), want: e130, status: 400},
			{name: "orderId too large", body: info("9223372036854775808"), want: e130, status: 400},
			{name: "orderId boolean", body: info("true"), want: e130, status: 400},
			{name: "orderId null", body: info("null"), want: e130, status: 400},
			{name: "orderId object", body: info(`{"id":1001}`), want: e130, status: 400},
			{name: "orderId array", body: info(`[1001]`), want: e130, status: 400},
			{name: "orderId empty string", body: info(`""`), want: e130, status: 400},
			{name: "orderId with spaces", body: info(`" 1001"`), want: e130, status: 400},
			{name: "orderId signed string", body: info(`"+1001"`), want: e130, status: 400},
			{name: "orderId letters", body: info(`"10a1"`), want: e130, status: 400},
			{name: "orderId of nothing", body: info("999999"), want: e131, status: 404},
			{name: "orderId of another member", body: info("2001"), want: e131, status: 404},
			{name: "RenewCheck bad orderId", body: with(alice, "action", `"RenewCheck"`, "orderId", `"x"`), want: e130, status: 400},
			{name: "RenewCheck another member's", body: with(alice, "action", `"RenewCheck"`, "orderId", "2001"), want: e131, status: 404},
			{name: "RenewCheck not renewed", body: with(alice, "action", `"RenewCheck"`, "orderId", "1003"), want: e132, status: 404},
		} {
			t.Run(tc.name, func(t *testing.T) {
				method := tc.method
				if method == "" {
					method = http.MethodPost
				}
				url := f.url
				if tc.path != "" {
					url = strings.TrimSuffix(f.url, "/api/digicert/") + tc.path
				}
				status, got := do(t, method, url, tc.body)
				if status != tc.status || got != tc.want {
					t.Fatalf("got %d %s\nwant %d %s", status, got, tc.status, tc.want)
				}
			})
		}
	})
}

// Another member's order and a missing one look the same, byte for byte.
func TestNoExistenceOracle(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, dsn string) {
		f := newFixture(t, dsn, server.Config{})
		for _, action := range []string{"OrderInfo", "RenewCheck"} {
			s1, theirs := f.post(t, f.alice(action, "orderId", "2001"))
			s2, missing := f.post(t, f.alice(action, "orderId", "2002"))
			if s1 != s2 || theirs != missing {
				t.Errorf("%s: another member's order %d %s; missing order %d %s", action, s1, theirs, s2, missing)
			}
		}
		// bob sees his own.
		status, _ := f.post(t, body("AccessName", `"bob"`, "AccessKey", q(f.bobKey), "action", `"OrderInfo"`, "orderId", "2001"))
		if status != http.StatusOK {
			t.Fatalf("bob's own order: %d", status)
		}
	})
}

func TestRefusedOnTheNextRequest(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, dsn string) {
		f := newFixture(t, dsn, server.Config{})
		ctx := context.Background()
		ok := func(want bool) {
			t.Helper()
			status, got := f.post(t, f.alice("Auth"))
			if (status == http.StatusOK) != want {
				t.Fatalf("Auth: %d %s, want accepted=%v", status, got, want)
			}
		}
		ok(true)
		if err := f.store.SetMemberDisabled(ctx, "alice", true); err != nil {
			t.Fatal(err)
		}
		ok(false)
		if err := f.store.SetMemberDisabled(ctx, "alice", false); err != nil {
			t.Fatal(err)
		}
		ok(true)
		id, _ := certorder.KeyID(f.aliceKey)
		if err := f.store.RevokeKey(ctx, id); err != nil {
			t.Fatal(err)
		}
		ok(false)
	})
}

func TestErrorsAs200(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testdb.SQLite(t), server.Config{ErrorsAs200: true, CASegment: "sectigo"})
	status, got := f.post(t, f.alice("OrderInfo", "orderId", "2001"))
	if status != http.StatusOK || got != `{"error_message":"Error(131) orderId is failed."}` {
		t.Fatalf("got %d %s", status, got)
	}
	if status, _ := f.post(t, f.alice("Auth")); status != http.StatusOK {
		t.Fatalf("Auth on /api/sectigo/: %d", status)
	}
}

func TestBadSegment(t *testing.T) {
	t.Parallel()
	for _, seg := range []string{"", "a/b", "..", "{x}", "a b"} {
		if _, err := server.New(nil, server.Config{CASegment: seg}); err == nil {
			t.Errorf("segment %q accepted", seg)
		}
	}
}

// The key's text is nowhere in the database, the WAL or the log.
func TestKeyNotStored(t *testing.T) {
	t.Parallel()
	var log bytes.Buffer
	f := newFixture(t, testdb.SQLite(t), server.Config{Logger: slogTo(&log)})
	f.post(t, f.alice("Auth"))
	f.post(t, f.alice("OrderInfo", "orderId", "1001"))
	f.post(t, body("AccessName", `"alice"`, "AccessKey", q(f.aliceKey+"x"), "action", `"Auth"`))
	_, secret, _ := strings.Cut(strings.TrimPrefix(f.aliceKey, certorder.KeyPrefix), "_")
	files, _ := filepath.Glob(f.dbPath + "*")
	if len(files) == 0 {
		t.Fatal("no database files")
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(secret)) {
			t.Errorf("%s holds the key's secret", name)
		}
	}
	if log.Len() == 0 || strings.Contains(log.String(), secret) {
		t.Errorf("log is empty or holds the key's secret:\n%s", log.String())
	}
}

func slogTo(w io.Writer) *slog.Logger { return slog.New(slog.NewJSONHandler(w, nil)) }

// A store that fails answers with the internal or unavailable error, never a trace.
func TestStoreFailure(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err    error
		want   string
		status int
	}{
		{err: certorder.ErrUnavailable, want: e150, status: 503},
		{err: errors.New("disk on fire"), want: e190, status: 500},
	} {
		h, err := server.New(failingStore{err: tc.err}, server.Config{CASegment: "digicert"})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(h)
		defer h.Close()
		key, _, _ := certorder.NewKey("")
		status, got := do(t, http.MethodPost, srv.URL+"/api/digicert/",
			body("AccessName", `"alice"`, "AccessKey", q(key), "action", `"Auth"`))
		srv.Close()
		if status != tc.status || got != tc.want {
			t.Errorf("store error %v: got %d %s, want %d %s", tc.err, status, got, tc.status, tc.want)
		}
	}
}

// failingStore fails every call; only FindCredential is reached.
type failingStore struct {
	server.Store
	err error
}

func (s failingStore) FindCredential(context.Context, string, int64) (certorder.Credential, *certorder.Order, error) {
	return certorder.Credential{}, nil, s.err
}
