package server_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/poll"
	"github.com/certorder/certorder/internal/testdb"
	"github.com/certorder/certorder/server"
	"github.com/certorder/certorder/stores"
	"github.com/certorder/certorder/storetest"
)

// outcomes counts the answers of a load, by status and body.
type outcomes struct {
	mu sync.Mutex
	n  map[string]int
}

func (o *outcomes) add(status int, body string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.n == nil {
		o.n = map[string]int{}
	}
	o.n[http.StatusText(status)+" "+body]++
}

// count is how many answers were ok (200), and how many 503 Error(150).
func (o *outcomes) count() (ok, unavailable int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.n["OK ok"], o.n["Service Unavailable "+e150]
}

// load sends OrderInfo from workers until stop is closed, each request
// bounded in time, and counts the answers.
func load(t *testing.T, url, body string, workers int, stop <-chan struct{}) *outcomes {
	t.Helper()
	o := &outcomes{}
	client := &http.Client{Timeout: 10 * time.Second}
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100000; i++ {
				select {
				case <-stop:
					return
				default:
				}
				resp, err := client.Post(url, "application/json", strings.NewReader(body))
				if err != nil {
					o.add(0, err.Error())
					continue
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				got := strings.TrimSpace(string(b))
				if resp.StatusCode == 200 {
					got = "ok"
				}
				o.add(resp.StatusCode, got)
			}
		}()
	}
	t.Cleanup(wg.Wait)
	return o
}

// pgServer starts the service on a PostgreSQL store whose connections
// carry appName, with alice's order 1; it returns the endpoint and a body.
func pgServer(t *testing.T, dsn, appName string) (string, string) {
	t.Helper()
	ctx := context.Background()
	s, err := stores.Open(ctx, testdb.WithParam(dsn, "application_name", appName))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.AddMember(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	key, k, _ := certorder.NewKey("")
	if err := s.AddKey(ctx, "alice", k); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ImportOrders(ctx, "alice", storetest.Orders(t, storetest.OrderJSON(1, 0, "2030-01-01"))); err != nil {
		t.Fatal(err)
	}
	h, err := server.New(s, server.Config{CASegment: "digicert", StoreTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() { srv.Close(); h.Close() })
	return srv.URL + "/api/digicert/", `{"AccessName":"alice","AccessKey":"` + key + `","action":"OrderInfo","orderId":1}`
}

// terminate terminates the connections named app and returns how many.
func terminate(t *testing.T, conn *pgx.Conn, app string) int {
	t.Helper()
	var n int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))
		FROM pg_stat_activity WHERE application_name = $1`, app).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func admin(t *testing.T) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), os.Getenv(testdb.EnvDSN))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// checkOnly fails the test on any answer but a 200 or a 503 Error(150).
func checkOnly(t *testing.T, what string, o *outcomes) (ok, unavailable int) {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	for k, n := range o.n {
		switch k {
		case "OK ok":
			ok = n
		case "Service Unavailable " + e150:
			unavailable = n
		default:
			t.Errorf("%s: %d answers %q", what, n, k)
		}
	}
	t.Logf("%s: %d ok, %d unavailable", what, ok, unavailable)
	return ok, unavailable
}

// The database terminates the store's connections under load: every
// answer is a 200 or a 503 Error(150), never a 500, and the service
// recovers by itself.
func TestPostgresConnectionsTerminated(t *testing.T) {
	t.Parallel()
	dsn := testdb.Postgres(t)
	app := "certorder-term-" + randomHex()
	url, body := pgServer(t, dsn, app)
	conn := admin(t)
	stop := make(chan struct{})
	o := load(t, url, body, 8, stop)
	var kills atomic.Int64
	for range 15 {
		time.Sleep(100 * time.Millisecond)
		kills.Add(int64(terminate(t, conn, app)))
	}
	// Until the load is answered again: the pool reconnects on its own.
	okDuring, _ := o.count()
	poll.Until(t, 10*time.Second, "an answer ok after the faults", func() bool { ok, _ := o.count(); return ok > okDuring })
	close(stop)
	ok, _ := checkOnly(t, "connections terminated", o)
	if kills.Load() == 0 || ok == 0 {
		t.Fatalf("%d connections terminated, %d answers ok: the test did not test", kills.Load(), ok)
	}
	if status, got := postOnce(t, url, body); status != 200 {
		t.Fatalf("after the faults: %d %s", status, got)
	}
}

// The database terminates the store's connections between requests (an
// operator, a restart): the next requests are answered, none a 503 for a
// connection the database had closed before it was taken. The pool pings
// a connection idle for over a second before handing it out, which hides
// the fault: an attempt counts only if its requests came within 800 ms of
// the burst that last used the connections.
func TestPostgresIdleConnectionsTerminated(t *testing.T) {
	t.Parallel()
	dsn := testdb.Postgres(t)
	app := "certorder-idle-" + randomHex()
	url, body := pgServer(t, dsn, app)
	conn := admin(t)
	for attempt := 1; ; attempt++ {
		var wg sync.WaitGroup
		for range 16 { // enough at once for the pool to open several connections
			wg.Go(func() {
				if resp, err := http.Post(url, "application/json", strings.NewReader(body)); err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			})
		}
		wg.Wait()
		used := time.Now()
		n := terminate(t, conn, app)
		if n == 0 {
			t.Fatal("no connection of the store to terminate")
		}
		bad := "" // the first answer not a 200
		for i := range 2 * n {
			if status, got := postOnce(t, url, body); status != 200 && bad == "" {
				bad = fmt.Sprintf("request %d: %d %s", i+1, status, got)
			}
		}
		if time.Since(used) > 800*time.Millisecond {
			if attempt == 5 {
				t.Fatalf("5 attempts, each slower than 800 ms: the machine is too busy for this test")
			}
			continue
		}
		if bad != "" {
			t.Fatalf("after %d connections were terminated, %s", n, bad)
		}
		return
	}
}

// The database refuses connections: every answer is a 503 Error(150);
// once it accepts them again, the service answers again by itself.
func TestPostgresRefusesConnections(t *testing.T) {
	t.Parallel()
	testdb.Postgres(t) // skips without PostgreSQL, fails under CI
	conn := admin(t)
	ctx := context.Background()
	db := "certorder_refuse_" + randomHex()
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+db); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := conn.Exec(context.Background(), "DROP DATABASE "+db+" WITH (FORCE)"); err != nil {
			t.Errorf("dropping %s: %v", db, err)
		}
	})
	u, err := url.Parse(os.Getenv(testdb.EnvDSN))
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + db
	app := "certorder-refuse-" + randomHex()
	endpoint, body := pgServer(t, u.String(), app)
	if status, got := postOnce(t, endpoint, body); status != 200 {
		t.Fatalf("before: %d %s", status, got)
	}
	for _, sql := range []string{"ALTER DATABASE " + db + " WITH ALLOW_CONNECTIONS false",
		"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '" + db + "'"} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	o := load(t, endpoint, body, 4, stop)
	// Until the load has met the refusal many times.
	poll.Until(t, 10*time.Second, "100 answers while the database refused", func() bool { _, u := o.count(); return u >= 100 })
	close(stop)
	if _, err := conn.Exec(ctx, "ALTER DATABASE "+db+" WITH ALLOW_CONNECTIONS true"); err != nil {
		t.Fatal(err)
	}
	if ok, unavailable := checkOnly(t, "database refusing connections", o); ok != 0 || unavailable == 0 {
		t.Fatalf("%d ok, %d unavailable while the database refused connections", ok, unavailable)
	}
	var status int
	var got string
	if !poll.Within(10*time.Second, func() bool { status, got = postOnce(t, endpoint, body); return status == 200 }) {
		t.Fatalf("not recovered: %d %s", status, got)
	}
}

func postOnce(t *testing.T, url, body string) (int, string) {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b))
}

func randomHex() string {
	b := make([]byte, 4)
	rand.Read(b)
	return hex.EncodeToString(b)
}
