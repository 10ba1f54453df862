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
	"strings"
	"time"
)

// loadbench ab --base REV: the working tree against a base revision, in
// one run, each measure alternating the two binaries (docs/PERFORMANCE.md,
// "A/B against a base revision"):
//
//   - the import: admin order import of the same orders into a new SQLite
//     store, orders a second;
//   - OrderInfo: each binary's serve on a store of its own with the same
//     orders, drawn by Zipf's law, as a ratio to a bare net/http handler
//     that answers that serve's bytes, measured right before it; with
//     --slice, the four (each binary's serve and bare handler) run together
//     and are driven in turn, a slice at a time (abInterleaved).
//
// Each line carries the load average (/proc/loadavg) before it; the
// summary gives each ratio of the working tree to the base. It prints
// figures and never judges them: a shared machine moves them.
func ab(args []string) error {
	fs := flag.NewFlagSet("loadbench ab", flag.ContinueOnError)
	base := fs.String("base", "", "the revision to compare the working tree with (git rev-parse syntax: 402c20c, HEAD~1, main)")
	short := fs.Bool("short", false, "a short run for CI: 20,000 orders imported, OrderInfo over 2,000, one round, 3 s a measure")
	importN := fs.Int("orders", 200000, "orders each import writes")
	infoN := fs.Int("info-orders", 10000, "orders in the store OrderInfo reads")
	bigN := fs.Int("import-orders", 0, "also time one import of this many orders by each binary (e.g. 1000000), after the rounds")
	rounds := fs.Int("rounds", 2, "rounds; each measures both binaries, the base first in odd rounds, the working tree in even ones")
	slice := fs.Duration("slice", 0, "measure OrderInfo interleaved: both serves and their bare handlers up together, each driven for this long in turn until each had --duration (whole seconds; 0: one run of each in turn)")
	var c config
	fs.DurationVar(&c.duration, "duration", 10*time.Second, "measured time of each OrderInfo and bare run")
	fs.DurationVar(&c.warmup, "warmup", 2*time.Second, "unmeasured time before each")
	fs.IntVar(&c.conns, "conns", 32, "concurrent connections")
	fs.IntVar(&c.threads, "threads", 2, "wrk threads")
	fs.StringVar(&c.generator, "generator", "", "wrk or go (default: wrk when it is on the PATH)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *base == "" {
		return fmt.Errorf("--base REV is required")
	}
	if *short {
		*importN, *infoN, *rounds = 20000, 2000, 1
		c.duration, c.warmup = 3*time.Second, time.Second
	}
	if c.generator == "" {
		c.generator = "go"
		if _, err := exec.LookPath("wrk"); err == nil {
			c.generator = "wrk"
		}
	}
	c.orders = *infoN
	c.serveArgs = strings.Fields("--access-log=false --rate-limit=0 --ip-rate-limit=0 --auth-fail-limit=0 --auth-fail-ip-limit=0 --max-per-ip=0")

	dir, err := os.MkdirTemp("", "loadbench-ab")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	start := time.Now()
	bins, err := buildAB(dir, *base)
	if err != nil {
		return err
	}
	gen := "loadbench's Go client (heavier than wrk: ratios come out higher than they are)"
	if c.generator == "wrk" {
		gen = wrkVersion() + fmt.Sprintf(" (%d threads, %d connections)", c.threads, c.conns)
	}
	load, _ := loadAvg()
	fmt.Printf("machine: %s/%s, %d CPUs, %s; load average: %s\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), cpuModel(), load)
	fmt.Printf("base %s, working tree %s (built in %.0fs); import %d orders; OrderInfo over %d orders, Zipf, %v after %v warm-up, %s; %d round(s)\n\n",
		bins[0].rev, bins[1].rev, time.Since(start).Seconds(), *importN, *infoN, c.duration, c.warmup, gen, *rounds)

	importFile := filepath.Join(dir, "import.json")
	if err := writeOrders(importFile, *importN); err != nil {
		return err
	}
	// Each binary's OrderInfo store, set up once (a binary reads only a
	// schema it knows).
	for _, b := range bins {
		c.db = filepath.Join(dir, b.name+"-info.db")
		if b.key, err = setupStore(&c, b.bin, dir); err != nil {
			return fmt.Errorf("%s: %w", b.name, err)
		}
		b.infoDB = c.db
	}
	for r := range *rounds {
		order := bins
		if r%2 == 1 {
			order = []*abBinary{bins[1], bins[0]}
		}
		for _, b := range order {
			rate, err := abImport(b, dir, importFile, *importN, fmt.Sprintf("round %d", r+1))
			if err != nil {
				return err
			}
			b.imports = append(b.imports, rate)
		}
		if *slice > 0 {
			if err := abInterleaved(&c, bins, dir, r, *slice); err != nil {
				return err
			}
			continue
		}
		for _, b := range order {
			ratio, err := abOrderInfo(&c, b, dir, r)
			if err != nil {
				return err
			}
			b.ratios = append(b.ratios, ratio)
		}
	}
	if *bigN > 0 {
		big := filepath.Join(dir, "big.json")
		if err := writeOrders(big, *bigN); err != nil {
			return err
		}
		for _, b := range bins {
			if _, err := abImport(b, dir, big, *bigN, "large import"); err != nil {
				return err
			}
		}
	}
	load, _ = loadAvg()
	fmt.Printf("\n| measure | base %s | working tree %s | working tree / base |\n|---|---|---|---|\n", bins[0].rev, bins[1].rev)
	for r := range *rounds {
		fmt.Printf("| import %d orders, orders/s, round %d | %.0f | %.0f | **%.2f** |\n", *importN, r+1,
			bins[0].imports[r], bins[1].imports[r], bins[1].imports[r]/bins[0].imports[r])
	}
	for r := range *rounds {
		fmt.Printf("| OrderInfo %d orders Zipf, ratio to bare, round %d | %.3f | %.3f | **%.2f** |\n", *infoN, r+1,
			bins[0].ratios[r], bins[1].ratios[r], bins[1].ratios[r]/bins[0].ratios[r])
	}
	// Interleaved, the two serves were driven in the same passes, so their
	// requests a second compare as they are; the two bare handlers answer
	// the same way, so theirs say how far a ratio to bare moves by noise.
	for r := range len(bins[0].rps) {
		fmt.Printf("| OrderInfo, req/s, round %d (bare: %.0f and %.0f, %.2f) | %.0f | %.0f | **%.2f** |\n", r+1,
			bins[0].bares[r], bins[1].bares[r], bins[1].bares[r]/bins[0].bares[r], bins[0].rps[r], bins[1].rps[r], bins[1].rps[r]/bins[0].rps[r])
	}
	fmt.Printf("\nload average at the end: %s; %.0fs in all\n", load, time.Since(start).Seconds())
	return nil
}

// abBinary is one side of an A/B run.
type abBinary struct {
	name, rev, bin string
	infoDB, key    string
	imports        []float64 // orders/s, by round
	ratios         []float64 // OrderInfo's ratio to bare, by round
	rps, bares     []float64 // OrderInfo's and its bare handler's requests a second, by round (--slice only)
}

// buildAB builds certorder at rev (in a git worktree of its own, removed
// after) and from the working tree.
func buildAB(dir, rev string) ([]*abBinary, error) {
	out, err := exec.Command("git", "rev-parse", "--short", rev+"^{commit}").Output()
	if err != nil {
		return nil, fmt.Errorf("git rev-parse %s (run from the repository): %v", rev, err)
	}
	baseRev := strings.TrimSpace(string(out))
	tree := filepath.Join(dir, "base-tree")
	if out, err := exec.Command("git", "worktree", "add", "--detach", tree, baseRev).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("git worktree add %s: %v\n%s", baseRev, err, out)
	}
	defer exec.Command("git", "worktree", "remove", "--force", tree).Run()
	head, _ := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	workRev := strings.TrimSpace(string(head))
	if st, _ := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); len(st) > 0 {
		workRev += "+changes"
	}
	bins := []*abBinary{{name: "base", rev: baseRev}, {name: "work", rev: workRev}}
	for i, src := range []string{tree, "."} {
		bins[i].bin = filepath.Join(dir, "certorder-"+bins[i].name)
		build := exec.Command("go", "build", "-o", bins[i].bin, "./cmd/certorder")
		build.Dir = src
		if out, err := build.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("building %s: %v\n%s", bins[i].rev, err, out)
		}
	}
	return bins, nil
}

// abImport imports file (n orders) into a new SQLite store with b and
// prints the figures; it returns orders a second.
func abImport(b *abBinary, dir, file string, n int, label string) (float64, error) {
	db := filepath.Join(dir, b.name+"-import.db")
	defer func() {
		for _, suffix := range []string{"", "-wal", "-shm", "-audit", "-audit-wal", "-audit-shm"} {
			os.Remove(db + suffix)
		}
	}()
	for _, args := range [][]string{{"admin", "migrate"}, {"admin", "member", "add", "bench"}} {
		if _, _, err := timed(b.bin, db, nil, nil, args...); err != nil {
			return 0, err
		}
	}
	took, peak, err := timed(b.bin, db, nil, nil, "admin", "order", "import", "--member", "bench", file)
	if err != nil {
		return 0, err
	}
	rate := float64(n) / took.Seconds()
	fmt.Printf("%s: import %d orders, %s %s: %.1fs, %.0f orders/s, CPU %.1fs, peak anonymous %d MB; load average before %s\n",
		label, n, b.name, b.rev, took.Seconds(), rate, peak.cpu.Seconds(), peak.anon>>20, peak.load)
	return rate, nil
}

// abOrderInfo measures b's serve under OrderInfo (Zipf) and, right before,
// the bare handler answering its bytes; it returns the ratio of the two.
func abOrderInfo(c *config, b *abBinary, dir string, round int) (float64, error) {
	srv, bareURL, stopAll, err := startPair(b, dir, c)
	if err != nil {
		return 0, err
	}
	defer stopAll()
	var rps [2]float64
	var loads [2]string
	for i, url := range []string{bareURL, srv.url} {
		scenario := []string{"bare", "orderinfo"}[i]
		if _, err := drive(c, dir, url, scenario, "zipf", b.key, 1000*round+1, c.warmup); err != nil {
			return 0, err
		}
		loads[i], _ = loadAvg()
		r, err := drive(c, dir, url, scenario, "zipf", b.key, 1000*round+2, c.duration)
		if err != nil {
			return 0, err
		}
		if bad := unexpected(scenario, r); bad > 0 {
			return 0, fmt.Errorf("%s %s: %d unexpected answers", b.name, scenario, bad)
		}
		rps[i] = r.rps
	}
	ratio := rps[1] / rps[0]
	fmt.Printf("round %d: OrderInfo, %s %s: %.0f req/s against bare's %.0f: %.3f of bare; load average before %s (bare's %s)\n",
		round+1, b.name, b.rev, rps[1], rps[0], ratio, loads[1], loads[0])
	return ratio, nil
}

// startPair starts b's serve on its OrderInfo store and a bare handler
// answering that serve's bytes; stopAll stops both.
func startPair(b *abBinary, dir string, c *config) (srv *server, bareURL string, stopAll func(), err error) {
	if srv, err = startServe(b.bin, b.infoDB, c.serveArgs); err != nil {
		return nil, "", nil, err
	}
	bareProc, bareURL, err := startBare(srv.url, b, dir)
	if err != nil {
		stop(srv.cmd)
		return nil, "", nil, err
	}
	return srv, bareURL, func() { stop(bareProc); stop(srv.cmd) }, nil
}

// startBare starts loadbench's bare handler answering the bytes of the
// serve at url's OrderInfo.
func startBare(url string, b *abBinary, dir string) (*exec.Cmd, string, error) {
	sample, err := post(http.DefaultClient, url, orderInfo(b.key, 1))
	if err != nil {
		return nil, "", err
	}
	file := filepath.Join(dir, b.name+"-answer.json")
	if err := os.WriteFile(file, sample, 0o600); err != nil {
		return nil, "", err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, "", err
	}
	return startProcess(self, []string{"bare", "--body", file}, `listening on (\S+)`)
}

// abInterleaved measures OrderInfo for both binaries at once: their serves
// and bare handlers run together, idle but for the one wrk drives, and each
// is driven for slice at a time in turn (the order rotating each pass, one
// warm-up each first) until each had c.duration. A drift of the machine's
// speed over minutes, larger here than the differences looked for, then
// falls on the four alike. It adds to each binary's ratios its ratio to
// its bare handler, requests a second over all its slices, and to its rps
// and bares those requests a second.
func abInterleaved(c *config, bins []*abBinary, dir string, round int, slice time.Duration) error {
	type target struct {
		label, scenario, url, key string
		rps                       []float64
	}
	var targets []*target
	for _, b := range bins {
		srv, bareURL, stopAll, err := startPair(b, dir, c)
		if err != nil {
			return fmt.Errorf("%s: %w", b.name, err)
		}
		defer stopAll()
		targets = append(targets, &target{label: b.name + " " + b.rev + " bare", scenario: "bare", url: bareURL, key: b.key},
			&target{label: b.name + " " + b.rev, scenario: "orderinfo", url: srv.url, key: b.key})
	}
	slice = max(time.Second, slice.Round(time.Second)) // wrk's -d is whole seconds
	passes := max(1, int(c.duration/slice))
	for _, t := range targets {
		if _, err := drive(c, dir, t.url, t.scenario, "zipf", t.key, 1000*round+1, c.warmup); err != nil {
			return err
		}
	}
	load, _ := loadAvg()
	for i := range passes {
		for j := range targets {
			t := targets[(i+j)%len(targets)]
			r, err := drive(c, dir, t.url, t.scenario, "zipf", t.key, 1000*round+10+i, slice)
			if err != nil {
				return err
			}
			if bad := unexpected(t.scenario, r); bad > 0 {
				return fmt.Errorf("%s: %d unexpected answers", t.label, bad)
			}
			t.rps = append(t.rps, r.rps)
		}
	}
	end, _ := loadAvg()
	for i, b := range bins {
		bare, info := mean(targets[2*i].rps), mean(targets[2*i+1].rps)
		b.ratios, b.rps, b.bares = append(b.ratios, info/bare), append(b.rps, info), append(b.bares, bare)
		fmt.Printf("round %d: OrderInfo interleaved (%d slices of %v each), %s: %.0f req/s (slices %.0f–%.0f) against bare's %.0f (%.0f–%.0f): %.3f of bare; load average %s before, %s after\n",
			round+1, passes, slice, targets[2*i+1].label, info, slices.Min(targets[2*i+1].rps), slices.Max(targets[2*i+1].rps),
			bare, slices.Min(targets[2*i].rps), slices.Max(targets[2*i].rps), info/bare, load, end)
	}
	return nil
}

func mean(v []float64) float64 {
	sum := 0.0
	for _, x := range v {
		sum += x
	}
	return sum / float64(max(1, len(v)))
}
