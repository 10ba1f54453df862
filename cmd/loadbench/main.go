// Command loadbench is certorder's load benchmark. It builds certorder,
// imports N orders into a fresh store, starts `certorder serve` and, in the
// same run, a bare net/http handler that answers a fixed order of the same
// size, then drives each with the same load and prints a table in which
// every figure is also a ratio to the bare handler. See docs/PERFORMANCE.md.
//
//	go run ./cmd/loadbench -orders 10000 -conns 32 -duration 10s
//	go run ./cmd/loadbench -orders 1000000 -db postgres://postgres@127.0.0.1:5432/test?sslmode=disable
//
// It sends traffic only to the loopback addresses of the servers it starts,
// and every run is bounded in time.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "bare" {
		if err := bare(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "loadbench bare:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "loadbench:", err)
		os.Exit(1)
	}
}

type config struct {
	orders    int
	conns     int
	duration  time.Duration
	warmup    time.Duration
	db        string // empty: a SQLite file in a temp dir
	scenarios []string
	serveArgs []string
}

func run(args []string) error {
	fs := flag.NewFlagSet("loadbench", flag.ContinueOnError)
	var c config
	fs.IntVar(&c.orders, "orders", 10000, "orders in the store")
	fs.IntVar(&c.conns, "conns", 32, "concurrent connections")
	fs.DurationVar(&c.duration, "duration", 10*time.Second, "measured time per scenario")
	fs.DurationVar(&c.warmup, "warmup", 2*time.Second, "unmeasured time before each scenario")
	fs.StringVar(&c.db, "db", "", "store DSN (default: a new SQLite file); a PostgreSQL DSN should name an empty schema (search_path)")
	scen := fs.String("scenarios", "bare,orderinfo,auth,authfail,renewcheck,mix", "scenarios to run, in order")
	extra := fs.String("serve-args", "--access-log=false --rate-limit=0 --ip-rate-limit=0 --auth-fail-limit=0",
		"extra arguments for certorder serve (the default turns off the access log and the limits, which a benchmark from one client would trip)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	c.scenarios = strings.Split(*scen, ",")
	c.serveArgs = strings.Fields(*extra)

	dir, err := os.MkdirTemp("", "loadbench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if c.db == "" {
		c.db = filepath.Join(dir, "bench.db")
	}
	bin := filepath.Join(dir, "certorder")
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/certorder").CombinedOutput(); err != nil {
		return fmt.Errorf("building certorder (run from the repository root): %v\n%s", err, out)
	}
	certorder := func(args ...string) (string, error) {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "CERTORDER_DB="+c.db)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		if err != nil {
			return "", fmt.Errorf("certorder %s: %v\n%s", strings.Join(args, " "), err, errOut.String())
		}
		return out.String(), nil
	}

	// The store: one member, its key, N orders with every other one renewed.
	if _, err := certorder("admin", "member", "add", "bench"); err != nil {
		return err
	}
	out, err := certorder("admin", "key", "create", "bench")
	if err != nil {
		return err
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	key := lines[len(lines)-1]
	file := filepath.Join(dir, "orders.json")
	if err := writeOrders(file, c.orders); err != nil {
		return err
	}
	start := time.Now()
	if _, err := certorder("admin", "order", "import", "--member", "bench", file); err != nil {
		return err
	}
	importTime := time.Since(start)
	fmt.Printf("imported %d orders in %.1fs (%.0f orders/s)\n", c.orders, importTime.Seconds(), float64(c.orders)/importTime.Seconds())

	// The service.
	serve, endpoint, err := startProcess(bin, append([]string{"serve", "--addr", "127.0.0.1:0", "--db", c.db}, c.serveArgs...), `listening on (\S+)`)
	if err != nil {
		return err
	}
	defer stop(serve)

	// The bare handler answers the same bytes the service gives for order 1.
	sample, err := post(http.DefaultClient, endpoint, orderInfo(key, 1))
	if err != nil {
		return err
	}
	sampleFile := filepath.Join(dir, "answer.json")
	if err := os.WriteFile(sampleFile, sample, 0o600); err != nil {
		return err
	}
	bareProc, bareURL, err := startProcess(self, []string{"bare", "--body", sampleFile}, `listening on (\S+)`)
	if err != nil {
		return err
	}
	defer stop(bareProc)

	fmt.Printf("machine: %s/%s, %d CPUs, %s; %d orders; %d connections; %v per scenario after %v warm-up; answer %d bytes\n\n",
		runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), cpuModel(), c.orders, c.conns, c.duration, c.warmup, len(sample))
	fmt.Println("| scenario | req/s | ratio to bare | p50 | p99 | errors | server RSS now / peak |")
	fmt.Println("|---|---|---|---|---|---|---|")
	var bareRPS float64
	for _, name := range c.scenarios {
		gen, ok := scenarios(key, c.orders)[name]
		if !ok {
			return fmt.Errorf("unknown scenario %q", name)
		}
		url, proc := endpoint, serve
		if name == "bare" {
			url, proc = bareURL, bareProc
		}
		load(url, gen, c.conns, c.warmup) // warm-up, not measured
		r := load(url, gen, c.conns, c.duration)
		if name == "bare" {
			bareRPS = r.rps
		}
		ratio := "-"
		if bareRPS > 0 {
			ratio = fmt.Sprintf("%.2f", r.rps/bareRPS)
		}
		rss, peak := memory(proc.Process.Pid)
		fmt.Printf("| %s | %.0f | %s | %v | %v | %d | %s / %s |\n", name, r.rps, ratio,
			r.p50.Round(time.Microsecond), r.p99.Round(time.Microsecond), r.unexpected, rss, peak)
	}
	return nil
}

// A request generator returns a body and whether its answer should be 200.
type generator func(rng *rand.Rand) (body []byte, wantOK bool)

func orderInfo(key string, id int) []byte {
	return []byte(`{"AccessName":"bench","AccessKey":"` + key + `","action":"OrderInfo","orderId":` + strconv.Itoa(id) + `}`)
}

func scenarios(key string, n int) map[string]generator {
	auth := []byte(`{"AccessName":"bench","AccessKey":"` + key + `","action":"Auth"}`)
	wrongKey := []byte(`{"AccessName":"bench","AccessKey":"` + key[:len(key)-4] + `aaaa","action":"Auth"}`)
	info := func(rng *rand.Rand) ([]byte, bool) { return orderInfo(key, 1+rng.IntN(n)), true }
	renew := func(rng *rand.Rand) ([]byte, bool) {
		id := 1 + 2*rng.IntN(max(n/2, 1)) // odd orders are renewed by the next one
		return []byte(`{"AccessName":"bench","AccessKey":"` + key + `","action":"RenewCheck","orderId":` + strconv.Itoa(id) + `}`), id < n
	}
	return map[string]generator{
		"bare":       info,
		"orderinfo":  info,
		"auth":       func(*rand.Rand) ([]byte, bool) { return auth, true },
		"authfail":   func(*rand.Rand) ([]byte, bool) { return wrongKey, false },
		"notfound":   func(rng *rand.Rand) ([]byte, bool) { return orderInfo(key, n+1+rng.IntN(n)), false },
		"renewcheck": renew,
		"mix": func(rng *rand.Rand) ([]byte, bool) {
			switch p := rng.IntN(100); {
			case p < 5:
				return wrongKey, false
			case p < 10:
				return orderInfo(key, n+1+rng.IntN(n)), false // no such order
			case p < 50:
				return info(rng)
			case p < 80:
				return renew(rng)
			default:
				return auth, true
			}
		},
	}
}

type result struct {
	rps        float64
	p50, p99   time.Duration
	unexpected int // answers other than expected, and transport errors
}

// load drives url with conns workers for d and measures every request.
func load(url string, gen generator, conns int, d time.Duration) result {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	transport := &http.Transport{MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns, DisableCompression: true}
	defer transport.CloseIdleConnections()
	hc := &http.Client{Transport: transport, Timeout: 10 * time.Second}
	var mu sync.Mutex
	var all []time.Duration
	unexpected := 0
	var wg sync.WaitGroup
	start := time.Now()
	for w := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 42))
			lat := make([]time.Duration, 0, 1<<16)
			bad := 0
			for ctx.Err() == nil {
				body, wantOK := gen(rng)
				t0 := time.Now()
				resp, err := hc.Post(url, "application/json", bytes.NewReader(body))
				if err != nil {
					if ctx.Err() == nil {
						bad++
					}
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				lat = append(lat, time.Since(t0))
				if (resp.StatusCode == http.StatusOK) != wantOK {
					bad++
				}
			}
			mu.Lock()
			all = append(all, lat...)
			unexpected += bad
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	slices.Sort(all)
	pct := func(p float64) time.Duration {
		if len(all) == 0 {
			return 0
		}
		return all[min(len(all)-1, int(float64(len(all))*p))]
	}
	return result{rps: float64(len(all)) / elapsed.Seconds(), p50: pct(0.50), p99: pct(0.99), unexpected: unexpected}
}

func post(hc *http.Client, url string, body []byte) ([]byte, error) {
	resp, err := hc.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %d %s", url, resp.StatusCode, b)
	}
	return b, err
}

// writeOrders writes n orders shaped like CertCentral's, about 1.5 KiB each;
// odd order i is renewed by order i+1.
func writeOrders(path string, n int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	w.WriteString("[\n")
	for i := 1; i <= n; i++ {
		renewal := ""
		if i%2 == 1 && i < n {
			renewal = fmt.Sprintf(`"is_renewed":true,"was_renewed_by_order_id":%d,`, i+1)
		}
		if i > 1 {
			w.WriteString(",\n")
		}
		fmt.Fprintf(w, `{"OrderId":%d,"certificate":{"id":%d,"thumbprint":"%040X","serial_number":"%032X",`+
			`"common_name":"host%d.example.com","dns_names":["host%d.example.com","www.host%d.example.com"],`+
			`"status":"issued","date_created":"2026-01-02T10:11:12+00:00","date_issued":"2026-01-03T00:00:00+00:00",`+
			`"valid_from":"2026-01-03","valid_till":"2027-01-03","cert_validity":{"years":1},`+
			`"csr":"-----BEGIN CERTIFICATE REQUEST-----\nMIICvDCCAaQCAQAwdzELMAkGA1UEBhMCVVMxDTALBgNVBAgMBFV0YWgxDzANBgNVBAcMBkxp\nbmRvbjEWMBQGA1UECgwNRGlnaUNlcnQgSW5jLjERMA8GA1UECwwIRGlnaUNlcnQxHTAbBgNV\n-----END CERTIFICATE REQUEST-----",`+
			`"is_rsassa_pss":false,"signature_hash":"sha256","key_size":2048,`+
			`"ca_cert":{"id":"5D10C6E0F0A4","name":"DigiCert Global G2 TLS RSA SHA256 2020 CA1"},`+
			`"user_id":"31337","receipt_id":%d,"purchased_dns_names":"1","purchased_wildcard_names":"0"},`+
			`"status":"issued",%s"date_created":"2026-01-02T10:11:12+00:00","date_issued":"2026-01-03T00:00:00+00:00",`+
			`"validity_years":1,"order_valid_from":"2026-01-03","order_valid_till":"2027-01-03",`+
			`"product":{"name_id":"ssl_plus","name":"Standard SSL","type":"ssl_certificate","csr_required":true},`+
			`"purchased_dns_names":1,"purchased_wildcard_names":null,"api_key":{"name":"acme","key_type":"acme"}}`,
			i, 100000+i, i*7919, i*104729, i, i, i, 8800000+i, renewal)
	}
	w.WriteString("\n]\n")
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}

// startProcess starts a server and waits for the line that names its address.
func startProcess(bin string, args []string, ready string) (*exec.Cmd, string, error) {
	cmd := exec.Command(bin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, "", err
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	re := regexp.MustCompile(ready)
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			go io.Copy(io.Discard, stderr)
			return cmd, m[1], nil
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	return nil, "", fmt.Errorf("%s did not start", bin)
}

func stop(cmd *exec.Cmd) {
	cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
	}
}

// memory reads a process's resident set size now (anonymous + file-backed,
// the latter being the mmapped database) and at its peak.
func memory(pid int) (string, string) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "?", "?"
	}
	field := func(name string) string {
		m := regexp.MustCompile(name + `:\s+(\d+) kB`).FindSubmatch(b)
		if m == nil {
			return "?"
		}
		kb, _ := strconv.Atoi(string(m[1]))
		return fmt.Sprintf("%.0f MB", float64(kb)/1024)
	}
	return fmt.Sprintf("%s (anon %s + file %s)", field("VmRSS"), field("RssAnon"), field("RssFile")), field("VmHWM")
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	if m := regexp.MustCompile(`model name\s*:\s*(.+)`).FindSubmatch(b); m != nil {
		return string(m[1])
	}
	return "unknown CPU"
}

// bare serves a fixed answer at any path: the ceiling the service is measured against.
func bare(args []string) error {
	fs := flag.NewFlagSet("bare", flag.ContinueOnError)
	bodyFile := fs.String("body", "", "the answer to give")
	if err := fs.Parse(args); err != nil {
		return err
	}
	body, err := os.ReadFile(*bodyFile)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "listening on http://%s/\n", ln.Addr())
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	})}
	err = srv.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}
