// Command certorder is the certificate-order lookup service, its operator
// commands and its member commands, in one binary. Run it without arguments
// for the list of commands.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "certorder:", err)
		}
		os.Exit(exitCode(err))
	}
}

const usage = `usage: certorder <command> [arguments]

The service:
  serve                      run the lookup service (--demo for demo data)

Operator commands (on the store named by --db or CERTORDER_DB):
  admin member add|list|disable|enable|link|unlink ...
  admin key create|list|revoke ...
  admin order import|renew|list|show ...
  admin sync status
  sync                       fetch orders from DigiCert CertCentral once (--dry-run, --full)

Member commands (on the endpoint named by --url or CERTORDER_URL):
  auth                       check that your credentials are accepted
  info ID                    show an order
  renew-check ID             show the order that renewed an order
  current ID                 follow renewals to the newest order

Run 'certorder <command> -h' for a command's flags.
`

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
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
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
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return usageError("unknown command %q", cmd)
}

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
		return exitUsage
	}
	return exitFailure
}

// newFlags makes a flag set that reports errors to stderr, not to the process.
func (e *env) newFlags(name, argsUsage string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintf(e.stderr, "usage: certorder %s %s\n", name, argsUsage)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses flags that may stand before, between or after the
// positional arguments, and checks the number of positional arguments.
func parse(fs *flag.FlagSet, args []string, want int) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usageError("%v", err)
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
	if len(pos) != want {
		fs.Usage()
		return nil, usageError("%s: want %d argument(s), got %d", fs.Name(), want, len(pos))
	}
	return pos, nil
}

// applyEnv gives each flag not set on the command line the value of its
// environment variable, when that is set: a flag wins over its variable.
func (e *env) applyEnv(fs *flag.FlagSet, vars map[string]string) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for name, v := range vars {
		val := strings.TrimSpace(e.getenv(v))
		if set[name] || val == "" {
			continue
		}
		if err := fs.Set(name, val); err != nil {
			return usageError("%s=%q: %v", v, val, err)
		}
	}
	return nil
}
