package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// README's quick start runs as written: its block holds the two commands
// the README promises, `serve --demo` (run here through run(), in an empty
// directory, on a free port instead of 8080) creates ./certorder.db and
// serves the demo, and the test command is the one CI runs.
func TestReadmeQuickStart(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)## Quick start\n.*?```sh\n(.*?)```").FindSubmatch(readme)
	if m == nil {
		t.Fatal("README has no quick-start sh block")
	}
	var cmds []string
	for _, line := range strings.Split(strings.TrimSpace(string(m[1])), "\n") {
		cmd, _, _ := strings.Cut(line, "#")
		cmds = append(cmds, strings.TrimSpace(cmd))
	}
	if len(cmds) != 2 || cmds[0] != "go run ./cmd/certorder serve --demo" || cmds[1] != "go test ./..." {
		t.Fatalf("the quick start's commands changed: %q; update this test with them", cmds)
	}
	ci, err := os.ReadFile(filepath.Join("..", "..", ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^go test -count=1 -json \./\.\.\. `).Match(ci) {
		t.Error(".ci/run no longer runs the README's test command (go test ./...)")
	}

	t.Chdir(t.TempDir()) // a fresh directory, as after a clone: the demo makes ./certorder.db
	c := newCLI(t, "")
	delete(c.env, "CERTORDER_DB")
	endpoint, stdout := startServe(t, c, strings.Fields(strings.TrimPrefix(cmds[0], "go run ./cmd/certorder serve"))...)
	if _, err := os.Stat("certorder.db"); err != nil {
		t.Fatalf("serve --demo made no ./certorder.db: %v", err)
	}
	key := regexp.MustCompile(`AccessKey:\s+(\S+)`).FindStringSubmatch(stdout.String())
	if key == nil || !strings.Contains(stdout.String(), "http://127.0.0.1:") {
		t.Fatalf("the demo banner:\n%s", stdout.String())
	}
	if code, body := post(t, endpoint, request("demo", key[1], "RenewCheck", "10001")); code != 200 ||
		body != `{"orderId":10001,"renewed_orderId":10002}` {
		t.Errorf("the demo's RenewCheck: %d %s", code, body)
	}
}
