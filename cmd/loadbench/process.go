package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// The processes a run starts and what it reads of them: serve, its
// metrics and profile, its memory, the machine's load.

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
