package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/certorder/certorder/digicert/digicerttest"
	"github.com/certorder/certorder/internal/acmeurl"
)

// devCommands are the commands under "dev": tools for trying certorder,
// which touch no store and no DigiCert.
var devCommands = []topCommand{
	{"simulator", "[--addr HOST:PORT] [--api-key-file FILE]", simulatorSummary, ""},
	{"simulate", "issue|revoke|reissue|renew ORDER [--simulator URL]", simulateSummary, ""},
}

const simulatorSummary = "serve a CertCentral simulator with example orders on loopback, to try certorder sync"

const simulatorHelp = simulatorSummary + `

It answers the three CertCentral Services API v2 endpoints a sync uses (List
orders, Order info, Status change list) with made-up orders in three
divisions (10001 Acme Corp, 10002 Globex, 10003 Initech), including renewal
chains, a pending and a canceled order, and keeps DigiCert's rate limits.
It serves the account's webhook API too: once certorder admin sync webhook
register points it at a serve with --certcentral-webhook-secret-file, it POSTs
its orders' events there as they change (to loopback endpoints only).
certorder dev simulate changes an order while it runs (issue, revoke,
reissue, renew), as CertCentral would: the next sync, or the webhook, sees it.
It listens on loopback only and runs until Ctrl-C; nothing it serves is real.
Point certorder sync at it with CERTORDER_DIGICERT_URL and the key
` + digicerttest.ExampleKey + ` (or the one in --api-key-file): docs/SYNC.md, "Try it".`

// dev runs "dev COMMAND".
func (e *env) dev(ctx context.Context, args []string) error {
	var b strings.Builder
	b.WriteString("usage: certorder dev <command> [flags]\n\n")
	for _, c := range devCommands {
		writeUsageLine(&b, c.name, c.args, c.summary)
	}
	switch {
	case len(args) == 0:
		fmt.Fprint(e.stderr, b.String())
		return usageError("dev: which one? see the list above")
	case isHelpFlag(args[0]):
		return &helpShown{usage: b.String()}
	case args[0] == "simulator":
		return e.simulator(ctx, args[1:])
	case args[0] == "simulate":
		return e.simulate(ctx, args[1:])
	}
	return e.unknownCommand([]string{"dev"}, args[0])
}

// simulator is "dev simulator": digicerttest's simulator with its example
// data set, until ctx ends.
func (e *env) simulator(ctx context.Context, args []string) error {
	const cmd = "dev simulator"
	fs := e.commandFlags(cmd, "[flags]", simulatorHelp)
	addr := fs.String("addr", "127.0.0.1:8099", "listen address, HOST:PORT on loopback (127.0.0.1, [::1], localhost)")
	keyFile := fs.String("api-key-file", "", "accept the API key in this file instead of "+digicerttest.ExampleKey)
	if _, err := parse(fs, args, 0); err != nil {
		return err
	}
	key := digicerttest.ExampleKey
	if *keyFile != "" {
		var err error
		if key, err = e.readKeyFile(cmd, "api-key-file", *keyFile); err != nil {
			return err
		}
	}
	host, _, err := net.SplitHostPort(*addr)
	if err != nil {
		return usageError("%s: --addr %q: %v (want HOST:PORT, such as 127.0.0.1:8099)", cmd, *addr, err)
	}
	if !acmeurl.Loopback(host) {
		// Made-up orders and a published key have no place on a network.
		return usageError("%s: --addr %s: the simulator listens on loopback only (127.0.0.1, [::1] or localhost)", cmd, *addr)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("%s: --addr %s: %w", cmd, *addr, err)
	}
	// Changes asked by dev simulate are told here too; e.stdout is written
	// from the server's goroutines from now on, one line at a time.
	var outMu sync.Mutex
	sim := digicerttest.NewServer(digicerttest.Options{APIKey: key, OnChange: func(c digicerttest.Change) {
		outMu.Lock()
		defer outMu.Unlock()
		for _, line := range changeLines(c) {
			fmt.Fprintf(e.stdout, "%s %s\n", time.Now().Format(time.TimeOnly), line)
		}
	}})
	orders := sim.AddExample()
	srv := &http.Server{Handler: sim, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()

	url := "http://" + ln.Addr().String() + digicerttest.BasePath
	keyNote := digicerttest.ExampleKey
	if *keyFile != "" {
		keyNote = "the one in " + *keyFile
	}
	fmt.Fprintf(e.stdout, "CertCentral simulator (made-up orders, for trying certorder sync) on %s\nAPI key: %s\n\n", url, keyNote)
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ORDER\tDIVISION\tCOMMON NAME\tSTATUS\tRENEWS")
	for _, o := range orders {
		renews := "-"
		if o.Renews != 0 {
			renews = fmt.Sprint(o.Renews)
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\n", o.ID, o.Division, o.CommonName, o.Status, renews)
	}
	tw.Flush()
	fmt.Fprintf(e.stdout, "\nIn another shell:\n  export CERTORDER_DIGICERT_URL=%s\n", url)
	if *keyFile == "" {
		fmt.Fprintf(e.stdout, "  export CERTORDER_DIGICERT_API_KEY=%s\n", digicerttest.ExampleKey)
	}
	fmt.Fprintln(e.stdout, "  certorder sync --dry-run              # docs/SYNC.md, \"Try it\", has the rest\n"+
		"  certorder dev simulate revoke 100006  # a change, as CertCentral would make it (issue, revoke, reissue, renew)\n"+
		"Changes are told here as they are made. Ctrl-C stops it.")

	select {
	case err := <-done:
		return fmt.Errorf("%s: %w", cmd, err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("%s: stopping: %w", cmd, err)
	}
	return nil
}
