package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// words is what __complete offers, without the summaries.
func completeWords(t *testing.T, c *cli, typed ...string) []string {
	t.Helper()
	out := c.ok(append([]string{completeCommand}, typed...)...)
	var words []string
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if line != "" {
			w, _, _ := strings.Cut(line, "\t")
			words = append(words, w)
		}
	}
	return words
}

func TestCompleteCandidates(t *testing.T) {
	t.Parallel()
	c := newCLI(t, filepath.Join(t.TempDir(), "certorder.db"))
	for _, tc := range []struct {
		typed []string
		want  []string
	}{
		{[]string{""}, []string{"serve", "admin", "sync", "auth", "info", "renew-check", "current", "acme-url", "deployed", "dev", "version", "completion", "help"}},
		{[]string{"de"}, []string{"deployed", "dev"}},
		{[]string{"deployed", "www.example.com", "--s"}, []string{"--servername", "--starttls"}},
		{[]string{"deployed", "--starttls", ""}, []string{"smtp"}},
		{[]string{"deployed", "--w"}, []string{"--warn-days"}},
		{[]string{"deployed", "--n"}, []string{"--nagios"}},
		{[]string{"deployed", "--servername", ""}, nil},
		{[]string{"re"}, []string{"renew-check"}},
		{[]string{"dev", ""}, []string{"simulator", "simulate"}},
		{[]string{"dev", "simulate", "--"}, []string{"--pending", "--simulator"}},
		{[]string{"dev", "simulate", ""}, []string{"issue", "revoke", "reissue", "renew"}},
		{[]string{"dev", "simulate", "re"}, []string{"revoke", "reissue", "renew"}},
		{[]string{"dev", "simulator", "--"}, []string{"--addr", "--api-key-file"}},
		{[]string{"admin", ""}, []string{"member", "key", "order", "audit", "webhook", "notice", "sync", "migrate", "export", "restore", "backup"}},
		{[]string{"admin", "member", ""}, []string{"add", "list", "disable", "enable", "keys", "link", "unlink"}},
		{[]string{"admin", "webhook", "r"}, []string{"remove", "rotate"}},
		{[]string{"admin", "sync", ""}, []string{"status", "webhook"}},
		{[]string{"admin", "sync", "webhook", ""}, []string{"register", "test", "status"}},
		{[]string{"admin", "sync", "webhook", "register", "--s"}, []string{"--secret-file"}},
		{[]string{"serve", "--certcentral"}, []string{"--certcentral-webhook-allow", "--certcentral-webhook-secret-file"}},
		{[]string{"admin", "notice", ""}, []string{"add", "list", "remove", "test", "unblock"}},
		{[]string{"admin", "notice", "test", "acme", "--smtp-a"}, []string{"--smtp-addr"}},
		{[]string{"admin", "key", "r"}, []string{"revoke"}},
		{[]string{"admin", "key", "create", "alice", "--"}, []string{"--db", "--label"}},
		{[]string{"admin", "backup", "--a"}, []string{"--audit"}},
		{[]string{"admin", "audit", "--since", ""}, nil}, // a value: the shell completes files
		{[]string{"admin", "--db", ""}, nil},
		{[]string{"serve", "--tls"}, []string{"--tls-cert", "--tls-key"}},
		{[]string{"current", "10001", "--i"}, []string{"--id"}},
		{[]string{"acme-url", "--c"}, []string{"--cert", "--certbot-renewal"}},
		{[]string{"acme-url", "--action", "re"}, []string{"renew", "reissue"}},
		{[]string{"acme-url", "--certbot-renewal", ""}, nil},
		{[]string{"completion", ""}, []string{"bash", "zsh", "fish"}},
		{[]string{"help", "admin", "o"}, []string{"order"}},
		{[]string{"help", "serve", "--"}, nil},
		{[]string{"frob", ""}, nil},
		{[]string{"--v"}, []string{"--version"}},
	} {
		if got := completeWords(t, c, tc.typed...); !slices.Equal(got, tc.want) {
			t.Errorf("complete %q = %q, want %q", tc.typed, got, tc.want)
		}
	}
	if entries, _ := os.ReadDir(filepath.Dir(c.env["CERTORDER_DB"])); len(entries) != 0 {
		t.Errorf("completion created %v", entries)
	}
}

// shell finds a shell for the completion test, or skips (fails under
// CI=true, where .ci/run installs zsh and fish).
func shell(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true but %s is not installed: .ci/run installs it (apt-get install %s)", name, name)
	}
	t.Skipf("%s completion test skipped: install %s to run it (Debian: apt-get install %s)", name, name, name)
	return ""
}

// Each script, in its real shell, completes through the real binary.
func TestCompletionScripts(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t) // named certorder, as the scripts expect
	dir := t.TempDir()
	path := filepath.Dir(bin) + string(os.PathListSeparator) + os.Getenv("PATH")
	script := func(sh string) string {
		f := filepath.Join(dir, sh)
		out, err := exec.Command(bin, "completion", sh).Output()
		if err != nil {
			t.Fatalf("completion %s: %v", sh, err)
		}
		if err := os.WriteFile(f, out, 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	runShell := func(t *testing.T, sh string, args ...string) string {
		t.Helper()
		cmd := exec.Command(shell(t, sh), args...)
		cmd.Env = append(os.Environ(), "PATH="+path, "HOME="+dir)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", sh, err, out)
		}
		return string(out)
	}
	check := func(t *testing.T, got string, want ...string) {
		t.Helper()
		for _, w := range want {
			if !slices.Contains(strings.Fields(got), w) {
				t.Errorf("completion lacks %q:\n%s", w, got)
			}
		}
	}

	t.Run("bash", func(t *testing.T) {
		f := script("bash")
		got := runShell(t, "bash", "-c", `source `+f+`
COMP_WORDS=(certorder admin me); COMP_CWORD=2; _certorder; echo "${COMPREPLY[@]}"
COMP_WORDS=(certorder serve --de); COMP_CWORD=2; _certorder; echo "${COMPREPLY[@]}"
complete -p certorder`)
		check(t, got, "member", "--demo", "-F", "_certorder")
	})
	t.Run("zsh", func(t *testing.T) {
		f := script("zsh")
		runShell(t, "zsh", "-n", f)
		// The completion system's functions, stood in for: what the script
		// hands them is what zsh would offer.
		got := runShell(t, "zsh", "-f", "-c", `compdef() { print "compdef $*" }
_describe() { print -rl -- "${(@P)${@[-1]}}" }
_files() { print FILES }
source `+f+`
words=(certorder admin ke); CURRENT=3; _certorder
words=(certorder admin key create x --l); CURRENT=6; _certorder
words=(certorder serve --db ''); CURRENT=4; _certorder`)
		check(t, got, "compdef", "key:key", "--label:a", "FILES")
	})
	t.Run("fish", func(t *testing.T) {
		f := script("fish")
		got := runShell(t, "fish", "--no-config", "-c", `source `+f+`
complete -C"certorder admin ord"
complete -C"certorder renew-check 1 --ti"`)
		check(t, got, "order", "--timeout")
	})
}
