package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"iter"
	"os"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/export"
	"github.com/certorder/certorder/internal/printable"
	"github.com/certorder/certorder/internal/storekit"
	"github.com/certorder/certorder/postgres"
	"github.com/certorder/certorder/sqlite"
	"github.com/certorder/certorder/wire"
)

func (e *env) migrate(ctx context.Context, store storekit.MemberStore, _ []string) error {
	// Opening the store created it or applied the migrations.
	fmt.Fprintln(e.stdout, "schema is up to date")
	ms, err := store.Members(ctx)
	if err != nil {
		return err
	}
	if len(ms) == 0 {
		fmt.Fprintln(e.stdout, "The store has no members yet. Next: certorder admin member add NAME, then certorder admin key create NAME "+
			"(with the same --db or CERTORDER_DB); or fill it from an export: certorder admin restore FILE")
	}
	return nil
}

// backup copies a store while it is in use (storekit.BackupStore): a
// SQLite file; admin refuses a PostgreSQL DSN, which has no Backup, before
// connecting.
func (e *env) backup(fs *flag.FlagSet) adminFunc {
	withAudit := fs.Bool("audit", false, "also copy the audit trail, to FILE-audit")
	return role(func(ctx context.Context, store storekit.BackupStore, args []string) error {
		if err := store.Backup(ctx, args[0], *withAudit); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "store copied to %s\n", args[0])
		if *withAudit {
			fmt.Fprintf(e.stdout, "audit trail copied to %s\n", sqlite.AuditPath(args[0]))
		}
		return nil
	})
}

// backupPostgres is admin backup's refusal of a PostgreSQL store, made
// before connecting to it.
const backupPostgres = "admin backup copies a SQLite store; " + postgres.BackupAdvice

func (e *env) export(ctx context.Context, store export.Exporter, _ []string) error {
	return export.Write(ctx, store, e.stdout)
}

// restorer is what admin restore writes to.
type restorer interface {
	Restore(ctx context.Context, records iter.Seq2[storekit.Record, error]) error
}

func (e *env) restore(ctx context.Context, store restorer, args []string) error {
	r, err := e.openInput(args[0])
	if err != nil {
		return err
	}
	defer r.Close()
	if err := store.Restore(ctx, export.Read(r)); err != nil {
		return fmt.Errorf("nothing restored: %w", err)
	}
	fmt.Fprintln(e.stdout, "restored")
	return nil
}

// openInput opens a file argument; "-" is standard input.
func (e *env) openInput(name string) (io.ReadCloser, error) {
	if name == "-" {
		return io.NopCloser(e.stdin), nil
	}
	return os.Open(name)
}

func (e *env) audit(fs *flag.FlagSet) adminFunc {
	member := fs.String("member", "", "only this AccessName")
	since := fs.String("since", "24h", "from this time: RFC 3339, YYYY-MM-DD, or a duration ago such as 24h")
	limit := fs.Int("limit", 100, "at most this many entries; 0 for all")
	return role(func(ctx context.Context, store storekit.AuditStore, _ []string) error {
		from, err := parseSince(*since, time.Now())
		if err != nil {
			return usageError("audit: --since %q is not a time: give RFC 3339 (2026-11-21T08:00:00Z), "+
				"a date (2026-11-21, UTC) or a duration ago (24h, 90m)", *since)
		}
		if *limit < 0 {
			return usageError("audit: --limit %d: give 0 for all entries, or a positive number", *limit)
		}
		entries, err := store.Audit(ctx, certorder.AuditQuery{Member: *member, Since: from, Limit: *limit})
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "TIME\tMEMBER\tACTION\tORDER\tOUTCOME\tCLIENT IP")
		for _, a := range entries {
			outcome, order := "ok", "-"
			if a.Outcome != 0 {
				outcome = fmt.Sprintf("Error(%d) %s", a.Outcome, wire.Code(a.Outcome).Text())
			}
			if a.OrderID != 0 {
				order = strconv.FormatInt(a.OrderID, 10)
			}
			if a.Count > 1 {
				outcome += fmt.Sprintf(" x%d", a.Count) // refusals counted together
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", a.Time.UTC().Format(time.RFC3339), orDash(a.Member), orDash(a.Action), order, outcome, a.ClientIP)
		}
		return tw.Flush()
	})
}

// orDash is a caller's text as it may be shown (printable.String), or "-"
// for none.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return printable.String(s)
}

// parseSince reads a point in time: RFC 3339, YYYY-MM-DD (UTC), or a duration before now.
func parseSince(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, fmt.Errorf("a negative duration %s", s)
		}
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	return time.Parse(certorder.DateLayout, s)
}
