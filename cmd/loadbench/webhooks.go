package main

// loadbench webhooks: two webhook scenarios (docs/PERFORMANCE.md, "Webhooks").
//
//	go run ./cmd/loadbench webhooks                                 # fairness, on SQLite
//	go run ./cmd/loadbench webhooks -db 'postgres://postgres@127.0.0.1:5432/test?sslmode=disable'
//	                                                                # and two instances on PostgreSQL
//
// Fairness: -members members, each with one endpoint on a loopback
// receiver; the first member's endpoint never answers and has -backlog
// events queued before serve starts. Then, -rounds times, every other
// member gets one event (an order's status changes); the delay of each is
// from the end of the change's import to its arrival. Two instances: two
// serve processes on one PostgreSQL schema, -slow-members members with
// -slow-events events each, receivers taking -slow-answer an answer;
// every delivery is counted, by webhook-id.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/certorder/certorder/internal/poll"
)

// receiver takes webhooks on loopback, by path: /m<i>.
type receiver struct {
	srv     *http.Server
	url     string
	hang    chan struct{} // closed at the end: the hanging endpoint's handler returns
	slow    time.Duration
	mu      sync.Mutex
	arrived map[string]time.Time // "member/order" -> first arrival
	ids     map[string]int       // webhook-id -> deliveries
	total   int
}

func newReceiver(hangPath string, slow time.Duration) (*receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	rc := &receiver{url: "http://" + ln.Addr().String(), hang: make(chan struct{}), slow: slow,
		arrived: map[string]time.Time{}, ids: map[string]int{}}
	rc.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		now := time.Now()
		if r.URL.Path == hangPath {
			select {
			case <-rc.hang:
			case <-r.Context().Done():
			}
			return
		}
		if rc.slow > 0 {
			time.Sleep(rc.slow) // the slow receiver being simulated
		}
		var ev struct {
			Data struct {
				OrderID int64 `json:"order_id"`
			} `json:"data"`
		}
		json.Unmarshal(body, &ev)
		rc.mu.Lock()
		k := fmt.Sprintf("%s/%d", r.URL.Path, ev.Data.OrderID)
		if _, ok := rc.arrived[k]; !ok {
			rc.arrived[k] = now
		}
		rc.ids[r.Header.Get("webhook-id")]++
		rc.total++
		rc.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}), ReadHeaderTimeout: 5 * time.Second}
	go rc.srv.Serve(ln)
	return rc, nil
}

func (rc *receiver) close() {
	close(rc.hang)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rc.srv.Shutdown(ctx)
}

func (rc *receiver) count() (total, distinct int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.total, len(rc.ids)
}

// addMembers creates the store and members m0...m<n-1>, each with an
// endpoint for order.status_changed at receiverURL/<member>.
func addMembers(bin, db, receiverURL string, n int) error {
	if err := admin(bin, db, "", "admin", "migrate"); err != nil {
		return err
	}
	for m := range n {
		name := fmt.Sprintf("m%d", m)
		if err := admin(bin, db, "", "admin", "member", "add", name); err != nil {
			return err
		}
		if err := admin(bin, db, "", "admin", "webhook", "add", name, receiverURL+"/"+name, "--allow-private", "--events", "order.status_changed"); err != nil {
			return err
		}
	}
	return nil
}

// webhookOrders is an import of orders first..last with status.
func webhookOrders(first, last int, status string) string {
	var b strings.Builder
	b.WriteByte('[')
	for i := first; i <= last; i++ {
		if i > first {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"OrderId":%d,"certificate":{"common_name":"h%d.example.com","valid_till":"2030-01-01"},"status":%q}`, i, i, status)
	}
	b.WriteByte(']')
	return b.String()
}

func admin(bin, db, stdin string, args ...string) error {
	cmd := exec.Command(bin, append(args, "--db", db)...)
	cmd.Stdin = strings.NewReader(stdin)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("certorder %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

func webhooks(args []string) error {
	fs := flag.NewFlagSet("loadbench webhooks", flag.ContinueOnError)
	members := fs.Int("members", 50, "members, each with one endpoint; the first one's hangs")
	backlog := fs.Int("backlog", 300, "events queued for the hanging endpoint before serve starts")
	rounds := fs.Int("rounds", 4, "rounds of one event for every other member")
	db := fs.String("db", "", "a postgres:// URL: also run the two-instance scenario there (in a schema of its own, dropped after)")
	slowMembers := fs.Int("slow-members", 10, "two instances: members")
	slowEvents := fs.Int("slow-events", 50, "two instances: events per member")
	slowAnswer := fs.Duration("slow-answer", 500*time.Millisecond, "two instances: time the receivers take to answer")
	if err := fs.Parse(args); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "loadbench-webhooks-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "certorder")
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/certorder").CombinedOutput(); err != nil {
		return fmt.Errorf("building certorder (run from the repository root): %v\n%s", err, out)
	}
	if err := fairness(bin, filepath.Join(dir, "fair.db"), *members, *backlog, *rounds); err != nil {
		return err
	}
	if *db == "" {
		fmt.Println("two instances: skipped (give -db postgres://...)")
		return nil
	}
	return twoInstances(bin, *db, *slowMembers, *slowEvents, *slowAnswer)
}

func fairness(bin, db string, members, backlog, rounds int) error {
	rc, err := newReceiver("/m0", 0)
	if err != nil {
		return err
	}
	defer rc.close()
	if err := addMembers(bin, db, rc.url, members); err != nil {
		return err
	}
	if err := admin(bin, db, webhookOrders(1, backlog, "issued"), "admin", "order", "import", "--member", "m0", "-"); err != nil {
		return err
	}
	if err := admin(bin, db, webhookOrders(1, backlog, "revoked"), "admin", "order", "import", "--member", "m0", "-"); err != nil {
		return err
	}
	for m := 1; m < members; m++ {
		first := m * 1000
		if err := admin(bin, db, webhookOrders(first, first+rounds-1, "issued"), "admin", "order", "import", "--member", fmt.Sprintf("m%d", m), "-"); err != nil {
			return err
		}
	}
	cmd, _, err := startProcess(bin, []string{"serve", "--addr", "127.0.0.1:0", "--db", db, "--webhook-allow-private"}, `listening on (\S+)`)
	if err != nil {
		return err
	}
	defer stop(cmd)
	sent := map[string]time.Time{}
	start := time.Now()
	for r := range rounds {
		for m := 1; m < members; m++ {
			id := m*1000 + r
			if err := admin(bin, db, webhookOrders(id, id, "revoked"), "admin", "order", "import", "--member", fmt.Sprintf("m%d", m), "-"); err != nil {
				return err
			}
			sent[fmt.Sprintf("/m%d/%d", m, id)] = time.Now()
		}
	}
	poll.Within(60*time.Second, func() bool { // what is missing then is counted below
		rc.mu.Lock()
		defer rc.mu.Unlock()
		for k := range sent {
			if _, ok := rc.arrived[k]; !ok {
				return false
			}
		}
		return true
	})
	var delays []float64
	missing := 0
	rc.mu.Lock()
	for k, at := range sent {
		if got, ok := rc.arrived[k]; ok {
			delays = append(delays, max(got.Sub(at), 0).Seconds())
		} else {
			missing++
		}
	}
	rc.mu.Unlock()
	slices.Sort(delays)
	pct := func(p float64) float64 {
		if len(delays) == 0 {
			return 0
		}
		return delays[min(len(delays)-1, int(p*float64(len(delays))))]
	}
	fmt.Printf("fairness (SQLite): %d members, m0's endpoint hanging with %d events queued; %d events of the others over %v\n",
		members, backlog, len(sent), time.Since(start).Round(100*time.Millisecond))
	fmt.Printf("  delivery delay: p50 %.2f s, p99 %.2f s, max %.2f s; %d not delivered within 60 s\n", pct(0.5), pct(0.99), pct(1), missing)
	if missing > 0 {
		return errors.New("events of the other members were not delivered")
	}
	return nil
}

func twoInstances(bin, base string, members, events int, answer time.Duration) error {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	b := make([]byte, 6)
	rand.Read(b)
	schema := "loadbench_webhooks_" + hex.EncodeToString(b)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		return err
	}
	defer conn.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	db := base + sep + "search_path=" + schema
	rc, err := newReceiver("", answer)
	if err != nil {
		return err
	}
	defer rc.close()
	if err := addMembers(bin, db, rc.url, members); err != nil {
		return err
	}
	for m := range members {
		name := fmt.Sprintf("m%d", m)
		first := m*1000 + 1
		if err := admin(bin, db, webhookOrders(first, first+events-1, "issued"), "admin", "order", "import", "--member", name, "-"); err != nil {
			return err
		}
		if err := admin(bin, db, webhookOrders(first, first+events-1, "revoked"), "admin", "order", "import", "--member", name, "-"); err != nil {
			return err
		}
	}
	start := time.Now()
	for range 2 {
		cmd, _, err := startProcess(bin, []string{"serve", "--addr", "127.0.0.1:0", "--db", db, "--webhook-allow-private",
			"--webhook-timeout", "1s"}, `listening on (\S+)`)
		if err != nil {
			return err
		}
		defer stop(cmd)
	}
	want := members * events
	poll.Within(120*time.Second, func() bool { _, distinct := rc.count(); return distinct >= want }) // checked below
	took := time.Since(start)
	time.Sleep(8 * time.Second) // a lease (1 s + 5 s) and more: room for a second delivery to show
	total, distinct := rc.count()
	fmt.Printf("two instances (PostgreSQL): %d events (%d members x %d), receivers answering in %v, --webhook-timeout 1s\n",
		want, members, events, answer)
	fmt.Printf("  %d deliveries of %d distinct webhook-ids in %v (then 8 s more watched); duplicates: %d\n",
		total, distinct, took.Round(100*time.Millisecond), total-distinct)
	if total != want || distinct != want {
		return fmt.Errorf("%d deliveries of %d ids, want %d of each", total, distinct, want)
	}
	return nil
}
