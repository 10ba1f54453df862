package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The store's set-up and -io: import, export and restore, each timed with
// its peak memory, and the orders they move.

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

func storeKind(dsn string) string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		return "postgres"
	}
	return "sqlite"
}
