// Command loadbench is certorder's load benchmark. It builds certorder,
// imports N orders into a store (or reuses one from -state), starts
// `certorder serve` and, in the same run, a bare net/http handler that
// answers an order of the same size, then drives each with the same
// requests and prints a table in which every figure is also a ratio to the
// bare handler measured in the same repetition, with the load generator
// named beside it. See docs/PERFORMANCE.md.
//
//	go run ./cmd/loadbench -orders 10000
//	go run ./cmd/loadbench -orders 1000000 -state /tmp/bench1m -access uniform,zipf -repeat 3
//	go run ./cmd/loadbench -orders 1000000 -db 'postgres://postgres@127.0.0.1:5432/test?sslmode=disable&search_path=bench'
//	go run ./cmd/loadbench webhooks -db 'postgres://postgres@127.0.0.1:5432/test?sslmode=disable'
//
// The load generator is wrk when it is on the PATH (apt-get install wrk),
// else loadbench's own Go client, which is heavier: its bare figure is
// lower, and so its ratios are flattering. It sends traffic only to the
// loopback addresses of the servers it starts, and every run is bounded in
// time.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
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
	"syscall"
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
	if len(os.Args) > 1 && os.Args[1] == "webhooks" {
		// loadbench webhooks [-db postgres://...]: the webhook scenarios (webhooks.go).
		if err := webhooks(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "loadbench webhooks:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) == 4 && os.Args[1] == "orders" {
		// loadbench orders N FILE: write the benchmark's import file alone.
		n, err := strconv.Atoi(os.Args[2])
		if err == nil {
			err = writeOrders(os.Args[3], n)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "loadbench orders:", err)
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
	threads   int
	duration  time.Duration
	warmup    time.Duration
	repeat    int
	db        string // empty: a SQLite file in the state or a temp dir
	state     string // directory that keeps the store and its key between runs
	scenarios []string
	access    []string
	generator string
	serveArgs []string
	variants  map[string][]string // extra serve processes: name -> extra arguments
	profile   string              // write a CPU profile of the service under this scenario
	profileTo string
	io        bool   // time export and restore too
	restoreDB string // where -io restores (default: a new SQLite file)
	bin       string // a certorder binary to run instead of building one
}

func run(args []string) error {
	fs := flag.NewFlagSet("loadbench", flag.ContinueOnError)
	var c config
	fs.IntVar(&c.orders, "orders", 10000, "orders in the store")
	fs.IntVar(&c.conns, "conns", 32, "concurrent connections")
	fs.IntVar(&c.threads, "threads", 2, "wrk threads")
	fs.DurationVar(&c.duration, "duration", 10*time.Second, "measured time per scenario")
	fs.DurationVar(&c.warmup, "warmup", 2*time.Second, "unmeasured time before each scenario")
	fs.IntVar(&c.repeat, "repeat", 3, "repetitions of the whole list; the table gives each figure's median")
	fs.StringVar(&c.db, "db", "", "store DSN (default: a new SQLite file); a PostgreSQL DSN should name an empty schema (search_path)")
	fs.StringVar(&c.state, "state", "", "directory keeping the store (SQLite) and its key between runs: a second run with the same -orders skips the import")
	scen := fs.String("scenarios", "bare,orderinfo,auth,authfail,renewcheck,mix",
		"scenarios to run, in order; scenario@variant runs it against a variant's server")
	access := fs.String("access", "uniform,zipf", "how order numbers are drawn: uniform over all orders, zipf (s=1.1, over a fixed permutation of the orders)")
	fs.StringVar(&c.generator, "generator", "", "wrk or go (default: wrk when it is on the PATH)")
	extra := fs.String("serve-args", "--access-log=false --rate-limit=0 --ip-rate-limit=0 --auth-fail-limit=0 --auth-fail-ip-limit=0 --max-per-ip=0",
		"extra arguments for certorder serve (the default turns off the access log and the limits, which a benchmark from one client would trip)")
	variants := fs.String("variants", "audit-off=--audit-retention=0;nocache=--cache-mb=0",
		"further serve processes, name=arguments;...: scenario@name is measured against that one")
	fs.StringVar(&c.profile, "profile", "", "scenario (as in -scenarios, with its access) during which to take a CPU profile of the service, e.g. orderinfo/zipf")
	fs.StringVar(&c.profileTo, "profile-out", "certorder.pprof", "where -profile writes")
	fs.BoolVar(&c.io, "io", false, "also time admin export (and its peak memory) and admin restore of the store, then stop")
	fs.StringVar(&c.restoreDB, "restore-db", "", "with -io: the empty store to restore into (default: a new SQLite file)")
	fs.StringVar(&c.bin, "certorder", "", "run this certorder binary instead of building one from the working tree (to compare two versions in the same hour)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	c.scenarios = strings.Split(*scen, ",")
	c.access = strings.Split(*access, ",")
	c.serveArgs = strings.Fields(*extra)
	c.variants = map[string][]string{}
	for _, v := range strings.Split(*variants, ";") {
		if name, a, ok := strings.Cut(v, "="); ok {
			c.variants[name] = strings.Fields(a)
		}
	}
	if c.generator == "" {
		c.generator = "go"
		if _, err := exec.LookPath("wrk"); err == nil {
			c.generator = "wrk"
		}
	}
	if c.generator != "wrk" && c.generator != "go" {
		return fmt.Errorf("-generator is wrk or go, not %q", c.generator)
	}
	genName := "loadbench's Go client (net/http)"
	if c.generator == "wrk" {
		genName = wrkVersion() + fmt.Sprintf(" (%d threads, Lua requests)", c.threads)
	} else {
		fmt.Fprintln(os.Stderr, "loadbench: wrk is not on the PATH; the Go client is heavier than wrk, so ratios come out higher than they are")
	}

	dir, err := os.MkdirTemp("", "loadbench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if c.state != "" {
		if err := os.MkdirAll(c.state, 0o700); err != nil {
			return err
		}
	}
	if c.db == "" {
		base := dir
		if c.state != "" {
			base = c.state
		}
		c.db = filepath.Join(base, fmt.Sprintf("bench-%d.db", c.orders))
	}
	bin := filepath.Join(dir, "certorder")
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if c.bin != "" {
		bin = c.bin
	} else if out, err := exec.Command("go", "build", "-o", bin, "./cmd/certorder").CombinedOutput(); err != nil {
		return fmt.Errorf("building certorder (run from the repository root): %v\n%s", err, out)
	}
	key, err := setupStore(&c, bin, dir)
	if err != nil {
		return err
	}
	if c.io {
		return exportRestore(&c, bin, dir)
	}

	// The services: the main one, then a variant each.
	procs := map[string]*server{}
	metricsAddr := freeAddr()
	main, err := startServe(bin, c.db, append([]string{"--metrics-addr", metricsAddr, "--pprof"}, c.serveArgs...))
	if err != nil {
		return err
	}
	defer stop(main.cmd)
	procs[""] = main
	for _, s := range c.scenarios {
		_, v, ok := strings.Cut(s, "@")
		if !ok || procs[v] != nil {
			continue
		}
		args, known := c.variants[v]
		if !known {
			return fmt.Errorf("scenario %s: no variant %q in -variants", s, v)
		}
		p, err := startServe(bin, c.db, append(slices.Clone(c.serveArgs), args...))
		if err != nil {
			return err
		}
		defer stop(p.cmd)
		procs[v] = p
	}

	// The bare handler answers the bytes the service gives for an order.
	sample, err := post(http.DefaultClient, main.url, orderInfo(key, 1))
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
	procs["bare"] = &server{cmd: bareProc, url: bareURL}

	load, _ := loadAvg()
	fmt.Printf("machine: %s/%s, %d CPUs, %s; load average before: %s\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), cpuModel(), load)
	fmt.Printf("store: %s, %d orders; load generator: %s; %d connections; %v per scenario after %v warm-up; %d repetitions; answer %d bytes\n\n",
		storeKind(c.db), c.orders, genName, c.conns, c.duration, c.warmup, c.repeat, len(sample))

	// Each repetition runs the whole list, bare first: every ratio is to
	// the bare figure of its own repetition.
	type cell struct {
		name, access string
		runs         []result
		ratios       []float64
		anon, file   string
		hitRatios    []float64 // the cache's, main service only
	}
	var cells []*cell
	find := func(name, access string) *cell {
		for _, c := range cells {
			if c.name == name && c.access == access {
				return c
			}
		}
		cl := &cell{name: name, access: access}
		cells = append(cells, cl)
		return cl
	}
	for rep := range c.repeat {
		bareRPS := map[string]float64{} // by access: each ratio is to the bare figure of the same requests
		for _, name := range c.scenarios {
			base, variant, _ := strings.Cut(name, "@")
			proc := procs[variant]
			if base == "bare" {
				proc = procs["bare"]
			}
			if _, ok := wrkMode[base]; !ok {
				return fmt.Errorf("unknown scenario %q", base)
			}
			accesses := c.access
			if base == "auth" || base == "authfail" {
				accesses = accesses[:1] // no order number drawn
			}
			for _, access := range accesses {
				label := access
				if base == "auth" || base == "authfail" {
					label = "-"
				}
				// The warm-up draws other orders than the run it warms (else
				// the run would find cached what the warm-up asked for); every
				// scenario of a repetition draws the same ones.
				if _, err := drive(&c, dir, proc.url, base, access, key, 1000*rep+1, c.warmup); err != nil {
					return err
				}
				hits0, misses0 := cacheCounters(metricsAddr)
				var prof chan error
				if c.profile == name+"/"+access && variant == "" && rep == c.repeat-1 {
					prof = profileAsync(metricsAddr, c.duration-time.Second, c.profileTo)
				}
				r, err := drive(&c, dir, proc.url, base, access, key, 1000*rep+2, c.duration)
				if err != nil {
					return err
				}
				if prof != nil {
					if err := <-prof; err != nil {
						return err
					}
				}
				if base == "bare" {
					bareRPS[access] = r.rps
				}
				cl := find(name, label)
				cl.runs = append(cl.runs, r)
				if b := bareRPS[access]; b > 0 {
					cl.ratios = append(cl.ratios, r.rps/b)
				}
				cl.anon, cl.file = memory(proc.cmd.Process.Pid)
				if hits1, misses1 := cacheCounters(metricsAddr); variant == "" && base != "bare" && hits1+misses1 > hits0+misses0 {
					cl.hitRatios = append(cl.hitRatios, (hits1-hits0)/(hits1-hits0+misses1-misses0))
				}
				fmt.Fprintf(os.Stderr, "run %d/%d %s %s: %.0f req/s, unexpected %d\n", rep+1, c.repeat, name, label, r.rps,
					unexpected(base, r))
			}
		}
	}
	fmt.Println("| scenario | access | generator | req/s (median; runs) | ratio to bare (median; runs) | p50 | p99 | unexpected answers | service anon / file RSS | cache hits |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|")
	gen := "wrk"
	if c.generator == "go" {
		gen = "Go client"
	}
	for _, cl := range cells {
		rps := make([]float64, len(cl.runs))
		var p50, p99 []float64
		bad := 0
		for i, r := range cl.runs {
			rps[i] = r.rps
			p50 = append(p50, float64(r.p50))
			p99 = append(p99, float64(r.p99))
			bad += unexpected(strings.Split(cl.name, "@")[0], r)
		}
		hits := "-"
		if len(cl.hitRatios) > 0 {
			hits = fmt.Sprintf("%.0f%%", 100*median(cl.hitRatios))
		}
		fmt.Printf("| %s | %s | %s | %.0f (%s) | %.2f (%s) | %v | %v | %d | %s / %s | %s |\n", cl.name, cl.access, gen,
			median(rps), join(rps, "%.0f"), median(cl.ratios), join(cl.ratios, "%.2f"),
			time.Duration(median(p50)).Round(10*time.Microsecond), time.Duration(median(p99)).Round(10*time.Microsecond),
			bad, cl.anon, cl.file, hits)
	}
	return nil
}

// setupStore creates the member, its key and the orders, and times the
// import; with -state, a store already set up for as many orders is reused.
func setupStore(c *config, bin, dir string) (string, error) {
	keyFile := ""
	if c.state != "" {
		keyFile = filepath.Join(c.state, fmt.Sprintf("key-%d-%s", c.orders, storeKind(c.db)))
		if b, err := os.ReadFile(keyFile); err == nil {
			fmt.Printf("reusing the store of %d orders set up before (key in %s)\n", c.orders, keyFile)
			return strings.TrimSpace(string(b)), nil
		}
	}
	certorder := func(args ...string) (string, error) {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "CERTORDER_DB="+c.db)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil {
			return "", fmt.Errorf("certorder %s: %v\n%s", strings.Join(args, " "), err, errOut.String())
		}
		return out.String(), nil
	}
	// Only migrate (and restore) create a store that does not exist yet.
	if _, err := certorder("admin", "migrate"); err != nil {
		return "", err
	}
	if _, err := certorder("admin", "member", "add", "bench"); err != nil {
		return "", err
	}
	out, err := certorder("admin", "key", "create", "bench")
	if err != nil {
		return "", err
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	key := lines[len(lines)-1]
	file := filepath.Join(dir, "orders.json")
	if err := writeOrders(file, c.orders); err != nil {
		return "", err
	}
	took, peak, err := timed(bin, c.db, nil, nil, "admin", "order", "import", "--member", "bench", file)
	if err != nil {
		return "", err
	}
	fmt.Printf("imported %d orders in %.1fs (%.0f orders/s), %s\n", c.orders, took.Seconds(),
		float64(c.orders)/took.Seconds(), peak)
	if keyFile != "" {
		if err := os.WriteFile(keyFile, []byte(key+"\n"), 0o600); err != nil {
			return "", err
		}
	}
	return key, nil
}

// exportRestore times admin export (to a file) and admin restore of it
// into an empty store, with each process's peak resident memory.
func exportRestore(c *config, bin, dir string) error {
	file := filepath.Join(dir, "export.jsonl")
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	took, peak, err := timed(bin, c.db, nil, f, "admin", "export")
	f.Close()
	if err != nil {
		return err
	}
	fi, _ := os.Stat(file)
	fmt.Printf("exported %d orders in %.1fs, %d MB written, %s\n", c.orders, took.Seconds(), fi.Size()>>20, peak)
	target := c.restoreDB
	if target == "" {
		target = filepath.Join(dir, "restored.db")
	}
	took, peak, err = timed(bin, target, nil, nil, "admin", "restore", file)
	if err != nil {
		return err
	}
	fmt.Printf("restored %d orders in %.1fs (%.0f orders/s), %s\n", c.orders, took.Seconds(),
		float64(c.orders)/took.Seconds(), peak)
	return nil
}

// timed runs certorder on db and returns how long it took and its peak
// memory: resident in all (which counts the pages of the memory-mapped
// SQLite file), and anonymous (the process's own; sampled every 10ms); and
// its CPU time and the load average before it, by which to read the time
// on a shared machine.
func timed(bin, db string, stdin io.Reader, stdout io.Writer, args ...string) (time.Duration, memPeak, error) {
	load, _ := loadAvg()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "CERTORDER_DB="+db)
	var errOut bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, &errOut
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, memPeak{}, err
	}
	peak := memPeak{load: load}
	done := make(chan struct{})
	sampled := make(chan int64)
	go func() {
		var high int64
		for t := time.NewTicker(10 * time.Millisecond); ; {
			select {
			case <-done:
				t.Stop()
				sampled <- high
				return
			case <-t.C:
				high = max(high, anonBytes(cmd.Process.Pid))
			}
		}
	}()
	err := cmd.Wait()
	close(done)
	peak.anon = <-sampled
	if err != nil {
		return 0, peak, fmt.Errorf("certorder %s: %v\n%s", strings.Join(args, " "), err, errOut.String())
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		peak.rss = ru.Maxrss << 10 // kilobytes on Linux
	}
	peak.cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	return time.Since(start), peak, nil
}

// memPeak is a process's peak memory, in bytes, its CPU time and the load
// average before it ran.
type memPeak struct {
	rss, anon int64
	cpu       time.Duration
	load      string
}

func (m memPeak) String() string {
	return fmt.Sprintf("peak anonymous memory %d MB (peak RSS %d MB with the mapped file), CPU %.1fs, load average before %s",
		m.anon>>20, m.rss>>20, m.cpu.Seconds(), m.load)
}

// anonBytes is a process's anonymous resident memory now.
func anonBytes(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	m := regexp.MustCompile(`RssAnon:\s+(\d+) kB`).FindSubmatch(b)
	if m == nil {
		return 0
	}
	kb, _ := strconv.ParseInt(string(m[1]), 10, 64)
	return kb << 10
}

func storeKind(dsn string) string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		return "postgres"
	}
	return "sqlite"
}

type result struct {
	rps                              float64
	p50, p99                         time.Duration
	requests, failures, socketErrors int // failures: answers of status 400 or above
}

// unexpected counts the answers a scenario did not expect: failures where
// it expects 200, successes where it expects a refusal, transport errors.
// The mix expects its 10% of failures.
func unexpected(scenario string, r result) int {
	switch scenario {
	case "authfail":
		return r.requests - r.failures + r.socketErrors
	case "mix":
		return max(0, r.failures-r.requests*12/100) + r.socketErrors // 10% expected, and some slack for chance
	}
	return r.failures + r.socketErrors
}

// drive runs one scenario with the chosen generator.
func drive(c *config, dir, url, scenario, access, key string, seed int, d time.Duration) (result, error) {
	if c.generator == "wrk" {
		return wrkLoad(c, dir, url, scenario, access, key, seed, d)
	}
	return goLoad(url, scenarios(key, c.orders)[scenario], c.orders, access, c.conns, seed, d), nil
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func join(v []float64, format string) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = fmt.Sprintf(format, x)
	}
	return strings.Join(parts, ", ")
}

func orderInfo(key string, id int) []byte {
	return []byte(`{"AccessName":"bench","AccessKey":"` + key + `","action":"OrderInfo","orderId":` + strconv.Itoa(id) + `}`)
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

// writeOrders writes n orders shaped like CertCentral's, about 1.3 KiB each;
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

// server is a started service: its process and its endpoint.
type server struct {
	cmd *exec.Cmd
	url string
}

func startServe(bin, db string, args []string) (*server, error) {
	cmd, url, err := startProcess(bin, append([]string{"serve", "--addr", "127.0.0.1:0", "--db", db}, args...), `listening on (\S+)`)
	if err != nil {
		return nil, err
	}
	return &server{cmd: cmd, url: url}, nil
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
	var said []string
	for sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			go io.Copy(io.Discard, stderr)
			return cmd, m[1], nil
		}
		said = append(said, sc.Text())
	}
	cmd.Process.Kill()
	cmd.Wait()
	return nil, "", fmt.Errorf("%s did not start:\n%s", bin, strings.Join(said, "\n"))
}

func stop(cmd *exec.Cmd) {
	cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
	}
}

// cacheCounters reads the service's cache hits and misses from /metrics.
func cacheCounters(metricsAddr string) (hits, misses float64) {
	resp, err := http.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		return 0, 0
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	read := func(name string) float64 {
		m := regexp.MustCompile(`(?m)^` + name + ` (\S+)$`).FindSubmatch(b)
		if m == nil {
			return 0
		}
		v, _ := strconv.ParseFloat(string(m[1]), 64)
		return v
	}
	return read("certorder_cache_hits_total"), read("certorder_cache_misses_total")
}

// freeAddr is a loopback address with a port free a moment ago.
func freeAddr() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "127.0.0.1:0"
	}
	defer ln.Close()
	return ln.Addr().String()
}

// profileAsync takes a CPU profile of the service for d, in the background.
func profileAsync(metricsAddr string, d time.Duration, path string) chan error {
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), d+30*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet,
			fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", metricsAddr, max(1, int(d.Seconds()))), nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- err
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err == nil {
			err = os.WriteFile(path, b, 0o600)
		}
		done <- err
	}()
	return done
}

// memory reads a process's resident memory: anonymous (the process's own)
// and file-backed (the memory-mapped SQLite file, which the kernel can reclaim).
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
	return field("RssAnon"), field("RssFile")
}

func loadAvg() (string, error) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?", err
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " "), nil
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
