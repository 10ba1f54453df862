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
//	go run ./cmd/loadbench ab --base 402c20c                # the import and OrderInfo, against a revision
//
// The load generator is wrk when it is on the PATH (apt-get install wrk),
// else loadbench's own Go client, which is heavier: its bare figure is
// lower, and so its ratios are flattering. It sends traffic only to the
// loopback addresses of the servers it starts, and every run is bounded in
// time.
package main

import (
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
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
	if len(os.Args) > 1 && os.Args[1] == "ab" {
		// loadbench ab --base REV: the working tree against a revision (ab.go).
		if err := ab(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "loadbench ab:", err)
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
