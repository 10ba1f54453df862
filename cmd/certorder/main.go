// Command certorder is the certificate-order lookup service, its operator
// commands and its member commands, in one binary. Run it without arguments
// (or with --help) for the list of commands.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/agnivade/levenshtein"
	"github.com/certorder/certorder/internal/printable"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) && !errors.Is(err, errSaid) {
			fmt.Fprintln(os.Stderr, "certorder:", errorText(err))
		}
		os.Exit(exitCode(err))
	}
}

// maxErrorLine bounds each line of an error printed: room for a message
// made of several values (a CertCentral error keeps five of them).
const maxErrorLine = 4096

// errorText is an error as a command prints it: each of its lines
// escaped and bounded by the one rule (internal/printable), since an
// error may carry text from the service, CertCentral, an import file or
// the database.
func errorText(err error) string {
	lines := strings.Split(err.Error(), "\n")
	for i, l := range lines {
		lines[i] = printable.Cut(l, maxErrorLine)
	}
	return strings.Join(lines, "\n")
}

// topCommand is one command of the first word, for the usage and completion.
type topCommand struct {
	name    string
	args    string
	summary string
	group   string // the heading it is listed under
}

// topCommands lists every first word but admin's, whose commands come from
// adminCommands. The order is the usage's.
var topCommands = []topCommand{
	{"serve", "[flags]", "run the lookup service (--demo for demo data)", groupService},
	{"sync", "[flags]", "fetch orders from DigiCert CertCentral once (--dry-run, --full)", groupService},
	{"auth", "[flags]", "check that your credentials are accepted", groupMember},
	{"info", "ID [flags]", "show an order", groupMember},
	{"renew-check", "ID [flags]", "show the order that renewed an order", groupMember},
	{"current", "ID [flags]", "follow renewals to the newest order", groupMember},
	{"acme-url", "DIRECTORY_URL [flags]", "an ACME directory URL with its orderId moved to the newest order", groupMember},
	{"deployed", "TARGET... [flags]", "does each server (HOST[:PORT]) serve its order's current certificate?", groupMember},
	{"dev", "simulator|simulate [flags]", "try certorder sync against a CertCentral simulator on loopback, and change its orders", groupOther},
	{"version", "", "print the version, commit and build date (also --version)", groupOther},
	{"completion", "bash|zsh|fish", "print a shell completion script", groupOther},
	{"help", "[COMMAND]", "print this, or a command's usage", groupOther},
}

const (
	groupService = "The service:"
	groupAdmin   = "Operator commands (on the store named by --db or CERTORDER_DB):"
	groupMember  = "Member commands (on the endpoint named by --url or CERTORDER_URL):"
	groupOther   = "Other:"
)

// usage is the top-level usage: every command, the operator's included.
func (e *env) usage() string {
	var b strings.Builder
	b.WriteString("usage: certorder <command> [arguments]\n")
	for _, group := range []string{groupService, groupAdmin, groupMember, groupOther} {
		fmt.Fprintf(&b, "\n%s\n", group)
		if group == groupAdmin {
			for _, c := range e.adminCommands() {
				writeUsageLine(&b, "admin "+c.name, c.args, c.summary)
			}
			continue
		}
		for _, c := range topCommands {
			switch {
			case c.group == group && c.name == "dev":
				for _, d := range devCommands {
					writeUsageLine(&b, "dev "+d.name, d.args, d.summary)
				}
			case c.group == group:
				writeUsageLine(&b, c.name, c.args, c.summary)
			}
		}
	}
	b.WriteString("\nRun 'certorder <command> --help' for a command's flags. Exit codes: 0 success,\n" +
		"1 failure, 2 wrong arguments or configuration; the member commands add 3 to 8.\n")
	return b.String()
}

// writeUsageLine writes one command of a usage list, its summary aligned,
// or on the next line when the command is too long.
func writeUsageLine(b *strings.Builder, name, args, summary string) {
	cmd := strings.TrimSpace(name + " " + args)
	const width = 36
	if len(cmd) < width-1 {
		fmt.Fprintf(b, "  %-*s %s\n", width-3, cmd, summary)
		return
	}
	fmt.Fprintf(b, "  %s\n  %-*s %s\n", cmd, width-3, "", summary)
}

// env is what every command gets from run.
type env struct {
	getenv func(string) string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

// run is the whole program, testable: main only wires it to the process.
func run(ctx context.Context, args []string, getenv func(string) string,
	stdin io.Reader, stdout, stderr io.Writer) error {
	e := &env{getenv: getenv, stdin: stdin, stdout: stdout, stderr: stderr}
	err := e.dispatch(ctx, args)
	// --help anywhere: the usage it asked for on stdout, and success.
	if h := (*helpShown)(nil); errors.As(err, &h) {
		fmt.Fprint(stdout, h.usage)
		return nil
	}
	return err
}

func (e *env) dispatch(ctx context.Context, args []string) error {
	if len(args) == 0 {
		fmt.Fprint(e.stderr, e.usage())
		return usageError("no command given")
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "serve":
		return e.serve(ctx, rest)
	case "admin":
		return e.admin(ctx, rest)
	case "sync":
		return e.sync(ctx, rest)
	case "auth", "info", "renew-check", "current":
		return e.member(ctx, cmd, rest)
	case "acme-url":
		return e.acmeURL(ctx, rest)
	case "deployed":
		return e.deployed(ctx, rest)
	case "dev":
		return e.dev(ctx, rest)
	case "version", "--version", "-version":
		return e.version(rest)
	case "completion":
		return e.completion(rest)
	case completeCommand:
		return e.complete(ctx, rest)
	case "help", "-h", "-help", "--help":
		if cmd == "help" && len(rest) > 0 {
			return e.dispatch(ctx, append(rest, "--help"))
		}
		fmt.Fprint(e.stdout, e.usage())
		return nil
	}
	return e.unknownCommand(nil, cmd)
}

// helpShown is what asking for a command's usage (-h, --help) returns:
// run prints the usage on stdout and succeeds.
type helpShown struct{ usage string }

func (h *helpShown) Error() string { return "help requested" }

// Is lets callers treat it as flag.ErrHelp.
func (h *helpShown) Is(target error) bool { return target == flag.ErrHelp }

// exitErr carries a process exit code with an error.
type exitErr struct {
	code int
	err  error
}

func (e *exitErr) Error() string { return e.err.Error() }
func (e *exitErr) Unwrap() error { return e.err }

// Exit codes shared by every command; the member commands add their own.
const (
	exitFailure = 1 // anything not listed
	exitUsage   = 2 // wrong arguments
)

func usageError(format string, a ...any) error {
	return &exitErr{code: exitUsage, err: fmt.Errorf(format, a...)}
}

func exitCode(err error) int {
	var e *exitErr
	if errors.As(err, &e) {
		return e.code
	}
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	return exitFailure
}

// newFlags makes a flag set that reports errors to stderr, not to the process.
// Its usage carries the command's summary from topCommands.
func (e *env) newFlags(name, argsUsage string) *flag.FlagSet {
	summary := ""
	for _, c := range topCommands {
		if c.name == name {
			summary = c.summary
		}
	}
	return e.commandFlags(name, argsUsage, summary)
}

// commandFlags is newFlags with the summary given.
func (e *env) commandFlags(name, argsUsage, summary string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintf(w, "usage: certorder %s\n", strings.TrimSpace(name+" "+argsUsage))
		if summary != "" {
			fmt.Fprintf(w, "\n%s\n", summary)
		}
		n := 0
		fs.VisitAll(func(*flag.Flag) { n++ })
		if n > 0 {
			fmt.Fprintln(w, "\nFlags:")
			fs.PrintDefaults()
		}
	}
	return fs
}

// parse parses flags that may stand before, between or after the
// positional arguments, and checks the number of positional arguments.
// -h or --help returns *helpShown with the command's usage.
func parse(fs *flag.FlagSet, args []string, want int) ([]string, error) {
	return parseRange(fs, args, want, want)
}

// parseRange is parse for a command that takes from lo to hi positional
// arguments.
func parseRange(fs *flag.FlagSet, args []string, lo, hi int) ([]string, error) {
	// The flag package prints the usage itself, on -h and on a bad flag:
	// catch it, for stdout, or for nothing: a bad flag is one line.
	out := fs.Output()
	var buf bytes.Buffer
	fs.SetOutput(&buf)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			fs.SetOutput(out)
			if errors.Is(err, flag.ErrHelp) {
				return nil, &helpShown{usage: buf.String()}
			}
			return nil, flagError(fs, err)
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
	fs.SetOutput(out)
	if len(pos) < lo || len(pos) > hi {
		fs.Usage()
		want := strconv.Itoa(lo)
		if hi > lo {
			want = fmt.Sprintf("%d to %d", lo, hi)
		}
		return nil, usageError("%s: want %s argument(s), got %d", fs.Name(), want, len(pos))
	}
	return pos, nil
}

// undefinedFlag starts the flag package's error for a flag it does not
// know (the same since Go 1); the flag's name follows.
const undefinedFlag = "flag provided but not defined: -"

// flagError is a bad flag's usage error: one line that names the closest
// flag the command has, if one is close, and the way to list them all,
// rather than the whole usage (serve's is over 90 lines).
func flagError(fs *flag.FlagSet, err error) error {
	help := fmt.Sprintf("'certorder %s --help' lists its flags", fs.Name())
	name, unknown := strings.CutPrefix(err.Error(), undefinedFlag)
	switch near := closestFlag(fs, name); {
	case !unknown:
		return usageError("%s: %v (%s)", fs.Name(), err, help)
	case near != "":
		return usageError("%s: unknown flag --%s: did you mean --%s? (%s)", fs.Name(), name, near, help)
	default:
		return usageError("%s: unknown flag --%s (%s)", fs.Name(), name, help)
	}
}

// flagWords names the flag meant by a word other programs use for it.
var flagWords = map[string]string{
	"port": "addr", "listen": "addr", "bind": "addr", "host": "addr", "address": "addr",
	"database": "db", "dsn": "db", "store": "db",
	"key": "access-key-file", "user": "access-name", "name": "access-name", "endpoint": "url",
}

// closestFlag is the flag of fs that name most likely meant: the one
// flagWords gives, else the one that starts with name, else the nearest by
// edit distance if it is near enough (a third of the name's length, at
// least one edit); "" if none is.
func closestFlag(fs *flag.FlagSet, name string) string {
	if w, ok := flagWords[name]; ok && fs.Lookup(w) != nil {
		return w
	}
	best, bestDist := "", max(1, len(name)/3)+1
	fs.VisitAll(func(f *flag.Flag) {
		d := levenshtein.ComputeDistance(name, f.Name)
		if len(name) >= 3 && strings.HasPrefix(f.Name, name) {
			d = 0
		}
		if d < bestDist {
			best, bestDist = f.Name, d
		}
	})
	return best
}
