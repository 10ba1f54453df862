package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// docSection returns the text of a Markdown file's section, from its
// "## title" heading to the next heading of that level.
func docSection(t *testing.T, file, title string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## "+title+"\n")
	if !ok {
		t.Fatalf("%s has no section %q", file, title)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	return section
}

// codeBlocks returns the fenced code blocks of Markdown text whose fence
// names lang.
func codeBlocks(text, lang string) []string {
	var blocks []string
	for _, m := range regexp.MustCompile("(?s)```"+lang+"\n(.*?)```").FindAllStringSubmatch(text, -1) {
		blocks = append(blocks, m[1])
	}
	return blocks
}

// waited and duration are what differs between two runs of a command:
// whether the rate limiter made it wait, which the machine's speed
// decides, and durations.
var (
	waited   = regexp.MustCompile(`, waited [0-9.]+[mµn]?s on the rate limiter`)
	duration = regexp.MustCompile(`[0-9.]+[mµn]?s\b`)
)

// withoutTimes leaves them out.
func withoutTimes(s string) string {
	return duration.ReplaceAllString(waited.ReplaceAllString(s, ""), "T")
}

// A certificate the simulator issues now has a serial number and dates
// of today's.
var (
	serialNumber = regexp.MustCompile(`serial [0-9a-f]+\b`)
	isoDate      = regexp.MustCompile(`\b\d{4}-\d{2}-\d{2}\b`)
)

// withoutToday leaves them out, and the times.
func withoutToday(s string) string {
	return isoDate.ReplaceAllString(serialNumber.ReplaceAllString(withoutTimes(s), "serial S"), "D")
}

// docs/SYNC.md's "Try it" works as written: its commands, run in order
// (the simulator on a port of its own, the store in a temporary
// directory), print the lines the section shows.
func TestTrySyncSection(t *testing.T) {
	t.Parallel()
	section := docSection(t, "../../docs/SYNC.md", "Try it")
	sh := codeBlocks(section, "sh")
	text := codeBlocks(section, "text")
	if len(sh) != 2 || len(text) != 1 {
		t.Fatalf("want two sh blocks (the simulator, the rest) and one text block (the output), got %d and %d", len(sh), len(text))
	}
	// The lines that install certorder, which the test runs in process.
	install := map[string]bool{
		"go install ./cmd/certorder":               true,
		`export PATH="$PATH:$(go env GOPATH)/bin"`: true,
	}
	installed := 0
	commands := func(block string) [][]string {
		var out [][]string
		for _, line := range strings.Split(block, "\n") {
			line, _, _ = strings.Cut(line, "  #") // a comment
			if line = strings.TrimSpace(line); line == "" {
				continue
			}
			if install[line] {
				installed++
				continue
			}
			if strings.ContainsAny(line, `'"$&|;<>`) {
				t.Fatalf("%q needs a shell to run: keep the section's commands plain", line)
			}
			out = append(out, strings.Fields(line))
		}
		return out
	}
	if _, err := os.Stat("../../cmd/certorder/main.go"); err != nil {
		t.Fatal(err)
	}

	// The simulator, as the first block starts it but on a free port,
	// after the lines that install certorder and put it on the PATH.
	sim := commands(sh[0])
	if installed != 2 || len(sim) != 1 || strings.Join(sim[0][:3], " ") != "certorder dev simulator" || sim[0][3] != "--addr" {
		t.Fatalf("the first block is not go install, export PATH, and one certorder dev simulator --addr ...: %q", sim)
	}
	docAddr := sim[0][4]
	url, _ := startDevSimulator(t, append(sim[0][3:4], "127.0.0.1:0")...)

	// The rest, in order, with the exports as the environment.
	c := newCLI(t, "")
	var output strings.Builder
	for _, args := range commands(sh[1]) {
		switch args[0] {
		case "export":
			for _, kv := range args[1:] {
				k, v, _ := strings.Cut(kv, "=")
				switch k {
				case "CERTORDER_DB":
					v = filepath.Join(t.TempDir(), filepath.Base(v))
				case "CERTORDER_DIGICERT_URL":
					if !strings.Contains(v, docAddr) {
						t.Fatalf("%s=%s is not the simulator's address %s", k, v, docAddr)
					}
					v = url
				}
				c.env[k] = v
			}
		case "certorder":
			stdout, stderr, err := c.run("", args[1:]...)
			if err != nil {
				t.Fatalf("%s: %v\n%s%s", strings.Join(args, " "), err, stdout, stderr)
			}
			output.WriteString(stdout + stderr)
		default:
			t.Fatalf("%q is not certorder or export", args)
		}
	}
	if installed != 3 {
		t.Errorf("the second shell does not put certorder on its PATH")
	}
	got := withoutToday(output.String())
	for _, line := range strings.Split(strings.TrimSpace(text[0]), "\n") {
		if want := withoutToday(line); !strings.Contains(got, want+"\n") {
			t.Errorf("no line %q in what the commands printed:\n%s", want, got)
		}
	}
}
