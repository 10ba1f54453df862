//go:build ignore

// testsummary reads `go test -json` on stdin and prints what a person needs:
// a line per package, the output of every test that failed, and every test
// that skipped, with its reason and a count. It exits 1 if a test failed,
// or, with -no-skips, if any test skipped (CI runs everything).
//
// It also counts the tests that need PostgreSQL, whether they ran on it or
// skipped without it, and with -readme FILE fails unless FILE states that
// count ("N tests and subtests (counted by .ci/testsummary.go"), so that the
// README's figure of skips without PostgreSQL stays true.
//
//	go test -json ./... | go run .ci/testsummary.go -no-skips -readme README.md
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// internal/testdb's messages (testdb.UsesPostgres, testdb.SkipsPostgres):
// one of them is in the output of every test that needs PostgreSQL.
const (
	usesPostgres  = "testdb: this test uses PostgreSQL"
	skipsPostgres = "PostgreSQL tests skipped"
)

// readmeFigure finds the README's count of the tests that need PostgreSQL.
var readmeFigure = regexp.MustCompile("(\\d+) tests and subtests \\(counted by `?\\.ci/testsummary\\.go")

// event is one line of test2json's output.
type event struct {
	Time    time.Time
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
	// Build events (go test -json reports a package that does not compile).
	ImportPath string
}

func main() {
	noSkips := flag.Bool("no-skips", false, "fail if any test skipped")
	readme := flag.String("readme", "", "fail unless this file states the number of tests that need PostgreSQL")
	flag.Parse()
	needsPostgres := map[string]bool{} // package + test

	output := map[string]*strings.Builder{} // package + test -> its output so far
	var failed, skipped []string
	skipReason := map[string]string{}
	passed := 0
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 16<<20)
	badLines := 0
	for in.Scan() {
		var e event
		if err := json.Unmarshal(in.Bytes(), &e); err != nil {
			// Not test2json: a build error printed by go test itself.
			fmt.Println(in.Text())
			badLines++
			continue
		}
		key := e.Package + " " + e.Test
		switch e.Action {
		case "build-output":
			fmt.Print(e.Output)
		case "build-fail":
			failed = append(failed, e.ImportPath+" (build)")
		case "output":
			if output[key] == nil {
				output[key] = &strings.Builder{}
			}
			output[key].WriteString(e.Output)
			if e.Test != "" && (strings.Contains(e.Output, usesPostgres) || strings.Contains(e.Output, skipsPostgres)) {
				needsPostgres[key] = true
			}
		case "pass":
			if e.Test == "" {
				fmt.Printf("ok   %s\t%.1fs\n", e.Package, e.Elapsed)
			} else {
				passed++
			}
			delete(output, key)
		case "skip":
			if e.Test == "" {
				fmt.Printf("?    %s\t[no test files]\n", e.Package)
				break
			}
			name := e.Package + "." + e.Test
			skipped = append(skipped, name)
			skipReason[name] = reason(output[key])
			delete(output, key)
		case "fail":
			if e.Test == "" {
				fmt.Printf("FAIL %s\t%.1fs\n", e.Package, e.Elapsed)
				if b := output[key]; b != nil { // a panic, a time-out, a test binary that died
					fmt.Print(indent(b.String()))
				}
				if len(failed) == 0 {
					failed = append(failed, e.Package)
				}
			} else {
				failed = append(failed, e.Package+"."+e.Test)
				fmt.Printf("--- FAIL: %s (%s)\n%s", e.Test, e.Package, indent(output[key].String()))
			}
			delete(output, key)
		}
	}
	if err := in.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(1)
	}

	sort.Strings(skipped)
	fmt.Printf("\n%d tests passed, %d failed, %d skipped\n", passed, len(failed), len(skipped))
	for _, name := range skipped {
		fmt.Printf("  SKIP %s: %s\n", name, skipReason[name])
	}
	fmt.Printf("%d tests and subtests need PostgreSQL (%s): they skip without it\n", len(needsPostgres), "CERTORDER_TEST_POSTGRES")
	if *readme != "" && len(failed) == 0 {
		if err := checkReadme(*readme, len(needsPostgres)); err != nil {
			fmt.Println("FAIL:", err)
			os.Exit(1)
		}
	}
	switch {
	case len(failed) > 0 || badLines > 0:
		os.Exit(1)
	case *noSkips && len(skipped) > 0:
		fmt.Println("FAIL: tests skipped, and CI must run them all (see the reasons above)")
		os.Exit(1)
	}
}

// checkReadme fails unless file states n as the count of tests that need
// PostgreSQL.
func checkReadme(file string, n int) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	m := readmeFigure.FindSubmatch(b)
	if m == nil {
		return fmt.Errorf("%s does not state how many tests need PostgreSQL (\"N tests and subtests (counted by .ci/testsummary.go\")", file)
	}
	if stated, _ := strconv.Atoi(string(m[1])); stated != n {
		return fmt.Errorf("%s says %d tests and subtests skip without PostgreSQL; this run counted %d: correct the figure", file, stated, n)
	}
	return nil
}

// reason is the last line a skipped test logged: its t.Skip message.
func reason(b *strings.Builder) string {
	if b == nil {
		return "(no reason given)"
	}
	var last string
	for _, line := range strings.Split(b.String(), "\n") {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "=== ") && !strings.HasPrefix(line, "--- SKIP") {
			last = line
		}
	}
	if last == "" {
		return "(no reason given)"
	}
	return last
}

func indent(s string) string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(s, "\n") {
		if line == "" || strings.HasPrefix(line, "=== ") {
			continue
		}
		b.WriteString("    " + line)
	}
	return b.String()
}
