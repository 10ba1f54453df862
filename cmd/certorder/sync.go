package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"golang.org/x/term"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/ccsync"
	"github.com/certorder/certorder/digicert"
	"github.com/certorder/certorder/internal/printable"
	"github.com/certorder/certorder/internal/storekit"
	"github.com/certorder/certorder/stores"
)

// exitBusy is sync's exit code when another sync holds the lock;
// exitIncomplete when the run stopped at --sync-max-fetches (the next
// continues).
const (
	exitBusy       = 3
	exitIncomplete = 4
)

// envAPIKey holds the CertCentral API key; there is no flag for the key
// itself, so that it never sits in a command line.
const envAPIKey = "CERTORDER_DIGICERT_API_KEY"

// upstreamConfig is how to reach CertCentral, for sync and serve.
type upstreamConfig struct {
	url, keyFile, key, limits string
	maxFetches                int
}

// options are the upstream settings, in the form of serve's table.
func (u *upstreamConfig) options() []option {
	return []option{
		{"digicert-url", "CERTORDER_DIGICERT_URL", "base URL of DigiCert's CertCentral Services API v2", stringVar(&u.url, digicert.DefaultURL)},
		{"digicert-api-key-file", "CERTORDER_DIGICERT_API_KEY_FILE", "file holding the CertCentral API key; without it the key is read from " + envAPIKey, stringVar(&u.keyFile, "")},
		{"digicert-limits", "CERTORDER_DIGICERT_LIMITS", "per-key request limits to keep inside, as REQUESTS/DURATION[,...], or off", stringVar(&u.limits, "1000/3m,100/5s")},
		{"", envAPIKey, "the CertCentral API key", stringVar(&u.key, "")},
		{"sync-max-fetches", "CERTORDER_SYNC_MAX_FETCHES", "Order info requests one sync run makes at most (and so how long it holds the sync lock); the next run continues where it stopped; 0: no bound", intVar(&u.maxFetches, ccsync.DefaultMaxFetches)},
	}
}

// client makes the CertCentral client. The key comes from the file, else
// from the environment; it is only ever put in the X-DC-DEVKEY header.
func (u *upstreamConfig) client(e *env, cmd string) (*digicert.Client, error) {
	key := u.key
	if u.keyFile != "" {
		var err error
		if key, err = e.readKeyFile(cmd, "digicert-api-key-file", u.keyFile); err != nil {
			return nil, err
		}
	} else if key == "" {
		return nil, usageError("no CertCentral API key: set %s or --digicert-api-key-file", envAPIKey)
	}
	limits, err := parseLimits(u.limits)
	if err != nil {
		return nil, usageError("--digicert-limits %q: %v", u.limits, err)
	}
	if u.maxFetches < 0 {
		return nil, usageError("--sync-max-fetches %d: give a positive number, or 0 for no bound", u.maxFetches)
	}
	return digicert.New(u.url, key, digicert.WithLimits(limits...))
}

// parseLimits reads "1000/3m,100/5s"; "off" is no limit at all.
func parseLimits(s string) ([]digicert.Limit, error) {
	if strings.TrimSpace(s) == "off" {
		return nil, nil
	}
	var limits []digicert.Limit
	for _, part := range strings.Split(s, ",") {
		n, per, ok := strings.Cut(strings.TrimSpace(part), "/")
		requests, err := strconv.Atoi(n)
		if !ok || err != nil || requests < 1 {
			return nil, fmt.Errorf("%q is not REQUESTS/DURATION", part)
		}
		d, err := time.ParseDuration(per)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("%q: the duration must be positive, like 3m", part)
		}
		limits = append(limits, digicert.Limit{Requests: requests, Per: d})
	}
	return limits, nil
}

const syncUsage = "[--db DSN] [--digicert-url URL] [--digicert-api-key-file FILE] [--sync-max-fetches N] [--dry-run] [--full]"

// sync runs one CertCentral sync and ends with its one-line summary.
func (e *env) sync(ctx context.Context, args []string) error {
	fs := e.newFlags("sync", syncUsage)
	var up upstreamConfig
	var db string
	opts := append([]option{dbOption(&db)}, up.options()...)
	defineOptions(fs, opts)
	dryRun := fs.Bool("dry-run", false, "report what would change, and change nothing")
	full := fs.Bool("full", false, "list and fetch every order again, instead of the changes since the last run")
	if _, err := parse(fs, args, 0); err != nil {
		return err
	}
	if err := e.applyEnv(fs, opts); err != nil {
		return err
	}
	if err := checkDSN("sync", db); err != nil {
		return err
	}
	client, err := up.client(e, "sync")
	if err != nil {
		return err
	}
	store, err := stores.Open(ctx, db)
	if err != nil {
		return err
	}
	defer store.Close()
	syncer, err := ccsync.New(ccsync.Config{Store: store, Client: client, MaxFetches: up.maxFetches,
		Logger: slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		return err
	}
	var progress *progressLine
	if isTerminal(e.stderr) {
		progress = &progressLine{w: e.stderr}
	}
	rep, err := syncer.Run(ctx, ccsync.Options{DryRun: *dryRun, Full: *full, Progress: progress.show})
	progress.clear()
	if errors.Is(err, ccsync.ErrBusy) {
		return &exitErr{code: exitBusy, err: err}
	}
	if errors.Is(err, digicert.ErrUnreachable) {
		err = unreachableHint("sync", err)
		if rep.Listed+rep.Fetched == 0 {
			return err // nothing was answered, so nothing to report: one line
		}
	}
	incomplete := errors.Is(err, ccsync.ErrIncomplete)
	if changed := rep.New + rep.Changed + rep.Renewals; (err == nil || incomplete) && !*dryRun && changed > 0 {
		// Serving PostgreSQL instances learn of the changes by notification:
		// when the command returns, members see what it stored.
		if _, aerr := confirmInstances(ctx, store); aerr != nil {
			fmt.Fprintf(e.stderr, "warning: the changes are stored, but %v\n", aerr)
		}
	}
	if err == nil || incomplete {
		// After a failure they would read as the run's findings.
		for _, line := range ccsync.UnassignedByDivision(rep.UnassignedOrders, 10) {
			fmt.Fprintln(e.stdout, line)
		}
	}
	fmt.Fprintln(e.stdout, rep.Line(err != nil))
	if incomplete {
		return &exitErr{code: exitIncomplete, err: err}
	}
	return err
}

// unreachableHint is err, when CertCentral could not be reached at all
// (digicert.ErrUnreachable: the URL's host does not resolve, nothing
// listens there), as one line of cmd that names the URL, why, and the
// setting to check; err itself otherwise.
func unreachableHint(cmd string, err error) error {
	var ue *digicert.UnreachableError
	if !errors.As(err, &ue) {
		return err
	}
	return fmt.Errorf("%s: %w; check --digicert-url (or CERTORDER_DIGICERT_URL)", cmd, ue) // the same words, errors.Is still sees it
}

// isTerminal reports whether w is a terminal, where progress is shown.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// progressLine shows a run's progress on one line of a terminal, redrawn
// at most five times a second. Its methods do nothing on a nil receiver.
type progressLine struct {
	mu    sync.Mutex
	w     io.Writer
	last  time.Time
	shown bool
}

func (p *progressLine) show(pr ccsync.Progress) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if time.Since(p.last) < 200*time.Millisecond {
		return
	}
	p.last, p.shown = time.Now(), true
	fmt.Fprintf(p.w, "\r\033[Ksync: %s; listed %d, fetched %d of %d, %d requests, %s waiting on the rate limit",
		pr.Phase, pr.Listed, pr.Fetched, pr.ToFetch, pr.Requests, pr.LimiterWait.Round(time.Second))
}

func (p *progressLine) clear() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

// memberLink is admin member link and unlink.
func (e *env) memberLink(link bool) func(fs *flag.FlagSet) adminFunc {
	return func(fs *flag.FlagSet) adminFunc {
		container := fs.Int64("container", 0, "the CertCentral division (container) ID (required)")
		return role(func(ctx context.Context, store storekit.SyncStore, args []string) error {
			if *container <= 0 {
				return usageError("--container ID is required: the division's CertCentral container ID")
			}
			if !link {
				if err := store.UnlinkContainer(ctx, args[0], *container); err != nil {
					return err
				}
				fmt.Fprintf(e.stdout, "member %s unlinked from division %d; it keeps the orders it has\n", args[0], *container)
				return nil
			}
			if err := store.LinkContainer(ctx, args[0], *container); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "member %s linked to division %d; the next sync gives it the division's orders\n", args[0], *container)
			return nil
		})
	}
}

// linksByMember lists each member's divisions, for admin member list.
// linkReader reads the members' division links.
type linkReader interface {
	ContainerLinks(ctx context.Context) ([]certorder.ContainerLink, error)
}

func linksByMember(ctx context.Context, store linkReader) (map[int64][]string, error) {
	links, err := store.ContainerLinks(ctx)
	if err != nil {
		return nil, err
	}
	out := map[int64][]string{}
	for _, l := range links {
		out[l.MemberID] = append(out[l.MemberID], strconv.FormatInt(l.Container, 10))
	}
	return out, nil
}

// syncStatusStore is what admin sync status reads.
type syncStatusStore interface {
	storekit.SyncStore
	storekit.CertCentralWebhookStore
}

// syncStatus is admin sync status: the cursor, the last run, the last
// event of CertCentral's webhook, the links, the unassigned orders and the
// recent runs.
func (e *env) syncStatus(ctx context.Context, store syncStatusStore, _ []string) error {
	st, err := store.SyncState(ctx, 10)
	if err != nil {
		return err
	}
	out := e.stdout
	if st.Cursor.IsZero() {
		fmt.Fprintln(out, "cursor: none; the next sync lists every order (a full run)")
	} else {
		fmt.Fprintf(out, "cursor: %s; the next sync asks for the changes since then\n", st.Cursor.UTC().Format(time.RFC3339))
	}
	if len(st.Runs) == 0 {
		fmt.Fprintln(out, "last run: none")
	} else {
		r := st.Runs[0]
		outcome := runOutcome(r)
		fmt.Fprintf(out, "last run: %s, %s, by %s\n  %s\n", r.Started.UTC().Format(time.RFC3339), outcome, printable.String(r.Instance),
			ccsync.Report{SyncSummary: r.Summary, Took: r.Finished.Sub(r.Started)}.Line(!r.OK))
		if r.Error != "" {
			fmt.Fprintf(out, "  error: %s\n", printable.Cut(r.Error, ccsync.MaxError))
		}
		if res := r.Summary.Resume; res != nil {
			fmt.Fprintf(out, "  the next run continues after order %d (fetched since %s)\n", res.After, res.Since.UTC().Format(time.RFC3339))
		}
	}
	if err := e.printReceived(ctx, store); err != nil {
		return err
	}
	links, err := store.ContainerLinks(ctx)
	if err != nil {
		return err
	}
	if len(links) == 0 {
		fmt.Fprintln(out, "division links: none (admin member link NAME --container ID)")
	}
	for _, l := range links {
		fmt.Fprintf(out, "division %d: member %s\n", l.Container, l.Member)
	}
	refs, err := store.UnassignedRefs(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "unassigned orders: %d\n", len(refs))
	for _, line := range ccsync.UnassignedByDivision(refs, 10) {
		fmt.Fprintln(out, "  "+line)
	}
	if len(st.Runs) > 1 {
		fmt.Fprintln(out, "recent runs:")
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  STARTED\tTOOK\tMODE\tOUTCOME\tINSTANCE\tNEW\tCHANGED\tRENEWALS\tREQUESTS")
		for _, r := range st.Runs {
			mode, outcome := "incremental", runOutcome(r)
			if r.Summary.Full {
				mode = "full"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\n", r.Started.UTC().Format(time.RFC3339),
				r.Finished.Sub(r.Started).Round(time.Millisecond), mode, outcome, printable.String(r.Instance),
				r.Summary.New, r.Summary.Changed, r.Summary.Renewals, r.Summary.Requests)
		}
		return tw.Flush()
	}
	return nil
}

// lastEventText says the last event CertCentral's webhook brought.
func lastEventText(w storekit.CertCentralWebhook) string {
	if w.LastEvent == "" {
		return "no event received (serve --certcentral-webhook-secret-file; docs/SYNC.md)"
	}
	order := ""
	if w.LastOrderID != 0 {
		order = fmt.Sprintf(" for order %d", w.LastOrderID)
	}
	return fmt.Sprintf("last event %s%s, received %s", printable.String(w.LastEvent), order, w.LastEventAt.UTC().Format(time.RFC3339))
}

// runOutcome says how a run ended: ok, incomplete (stopped at
// --sync-max-fetches) or failed.
func runOutcome(r storekit.SyncRun) string {
	switch {
	case r.OK:
		return "ok"
	case r.Summary.Incomplete:
		return "incomplete"
	}
	return "failed"
}
