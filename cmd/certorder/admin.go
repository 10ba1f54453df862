package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/stores"
	"github.com/certorder/certorder/wire"
)

const adminUsage = `usage: certorder admin <command> [--db DSN] [arguments]

  member add NAME              create a member (NAME is its AccessName)
  member list                  list members
  member disable NAME          refuse the member's requests from the next one on
  member enable NAME           accept them again
  member keys NAME on|off      let the member create and revoke its own keys on the web page, or not
  member link NAME --container ID
                               give the member the orders of a CertCentral division (certorder sync)
  member unlink NAME --container ID
                               stop that; the member keeps the orders it has
  key create NAME [--label T]  create an API key; printed once, on the last line
  key list NAME                list a member's keys (never the secrets)
  key revoke KEYID             refuse the key from the next request on
  order import --member NAME FILE|-
                               import one order object or an array of them, all or none
  order renew OLD NEW          record that order NEW renewed order OLD
  order list NAME              list a member's orders
  order show ID                show an order as OrderInfo answers it
  audit [--member NAME] [--since TIME] [--limit N]
                               list API calls, newest first (TIME: RFC 3339, YYYY-MM-DD, or a duration ago: 24h)
  webhook add MEMBER URL [--events TYPES]
                               add a webhook endpoint; its signing secret alone on the last line
  webhook list MEMBER          list a member's endpoints
  webhook remove ID            remove an endpoint and its deliveries
  webhook rotate ID            new signing secret; the old one signs too for 24 hours
  sync status                  the CertCentral sync's cursor, last runs, links and unassigned orders
  migrate                      apply the store's schema migrations, and nothing else
  export                       write every member, key hash, order and renewal as JSON lines
  restore FILE|-               load an export into an empty store, all or nothing
`

// adminFunc does one operator command on an open store.
type adminFunc func(ctx context.Context, store certorder.Store, args []string) error

// adminCommand is one operator command: its positional arguments, and setup,
// which declares its flags and returns what it does.
type adminCommand struct {
	args  string // usage of the positional arguments
	nargs int
	setup func(fs *flag.FlagSet) adminFunc
}

func noFlags(f adminFunc) func(*flag.FlagSet) adminFunc {
	return func(*flag.FlagSet) adminFunc { return f }
}

// adminCommands lists every operator command.
func (e *env) adminCommands() map[string]adminCommand {
	return map[string]adminCommand{
		"member add":     {"NAME", 1, noFlags(e.memberAdd)},
		"member list":    {"", 0, noFlags(e.memberList)},
		"member disable": {"NAME", 1, noFlags(e.memberSetDisabled(true))},
		"member enable":  {"NAME", 1, noFlags(e.memberSetDisabled(false))},
		"member keys":    {"NAME on|off", 2, noFlags(e.memberKeys)},
		"member link":    {"NAME --container ID", 1, e.memberLink(true)},
		"member unlink":  {"NAME --container ID", 1, e.memberLink(false)},
		"sync status":    {"", 0, noFlags(e.syncStatus)},
		"key create":     {"NAME [--label TEXT]", 1, e.keyCreate},
		"key list":       {"NAME", 1, noFlags(e.keyList)},
		"key revoke":     {"KEYID", 1, noFlags(e.keyRevoke)},
		"order import":   {"--member NAME FILE|-", 1, e.orderImport},
		"order renew":    {"OLD NEW", 2, noFlags(e.orderRenew)},
		"order list":     {"NAME", 1, noFlags(e.orderList)},
		"order show":     {"ID", 1, noFlags(e.orderShow)},
		"audit":          {"[--member NAME] [--since TIME] [--limit N]", 0, e.audit},
		"webhook add":    {"MEMBER URL [--events TYPES]", 2, e.webhookAdd},
		"webhook list":   {"MEMBER", 1, noFlags(e.webhookList)},
		"webhook remove": {"ID", 1, noFlags(e.webhookRemove)},
		"webhook rotate": {"ID", 1, noFlags(e.webhookRotate)},
		"migrate":        {"", 0, noFlags(e.migrate)},
		"export":         {"", 0, noFlags(e.export)},
		"restore":        {"FILE|-", 1, noFlags(e.restore)},
	}
}

func (e *env) admin(ctx context.Context, args []string) error {
	commands := e.adminCommands()
	// A command is one word (migrate) or two (member add).
	var name string
	var cmd adminCommand
	ok := false
	for n := 1; n <= min(2, len(args)) && !ok; n++ {
		name = strings.Join(args[:n], " ")
		cmd, ok = commands[name]
	}
	if !ok {
		fmt.Fprint(e.stderr, adminUsage)
		return usageError("admin: unknown command %q", strings.Join(args, " "))
	}
	fs := e.newFlags("admin "+name, cmd.args)
	db := e.dbFlag(fs)
	do := cmd.setup(fs)
	pos, err := parse(fs, args[len(strings.Fields(name)):], cmd.nargs)
	if err != nil {
		return err
	}
	if err := e.applyEnv(fs, dbEnv); err != nil {
		return err
	}
	store, err := stores.Open(ctx, *db)
	if err != nil {
		return err
	}
	defer store.Close()
	return do(ctx, store, pos)
}

func (e *env) memberAdd(ctx context.Context, store certorder.Store, args []string) error {
	if _, err := store.AddMember(ctx, args[0]); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "member %s added\n", args[0])
	return nil
}

func (e *env) memberList(ctx context.Context, store certorder.Store, _ []string) error {
	ms, err := store.Members(ctx)
	if err != nil {
		return err
	}
	links, err := linksByMember(ctx, store)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSTATUS\tCREATED\tDIVISIONS")
	for _, m := range ms {
		status := "enabled"
		if m.Disabled {
			status = "disabled"
		}
		divisions := strings.Join(links[m.ID], ",")
		if divisions == "" {
			divisions = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", m.Name, status, m.CreatedAt.Format(time.RFC3339), divisions)
	}
	return tw.Flush()
}

func (e *env) memberSetDisabled(disabled bool) adminFunc {
	return func(ctx context.Context, store certorder.Store, args []string) error {
		if err := store.SetMemberDisabled(ctx, args[0], disabled); err != nil {
			return err
		}
		state := "enabled"
		if disabled {
			state = "disabled"
		}
		fmt.Fprintf(e.stdout, "member %s %s\n", args[0], state)
		if !disabled {
			return nil
		}
		return e.awaitInstances(ctx, store, "member "+args[0]+" disabled")
	}
}

// memberKeys turns a member's self-service keys on the web page on or off.
func (e *env) memberKeys(ctx context.Context, store certorder.Store, args []string) error {
	var allowed bool
	switch args[1] {
	case "on":
		allowed = true
	case "off":
	default:
		return usageError("member keys: say on or off, not %q", args[1])
	}
	if err := store.SetSelfServiceKeys(ctx, args[0], allowed); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "member %s: self-service keys on the web page %s\n", args[0], args[1])
	return nil
}

func (e *env) keyCreate(fs *flag.FlagSet) adminFunc {
	label := fs.String("label", "", "a note on what the key is for")
	return func(ctx context.Context, store certorder.Store, args []string) error {
		text, key, err := certorder.NewKey(*label)
		if err != nil {
			return err
		}
		if err := store.AddKey(ctx, args[0], key); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "key %s created for member %s. It is shown this once and stored only as a hash:\n%s\n",
			key.ID, args[0], text)
		return nil
	}
}

func (e *env) keyList(ctx context.Context, store certorder.Store, args []string) error {
	keys, err := store.Keys(ctx, args[0])
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEYID\tLABEL\tCREATED\tSTATUS")
	for _, k := range keys {
		status := "active"
		if k.Revoked() {
			status = "revoked " + k.RevokedAt.Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", k.ID, k.Label, k.CreatedAt.Format(time.RFC3339), status)
	}
	return tw.Flush()
}

func (e *env) keyRevoke(ctx context.Context, store certorder.Store, args []string) error {
	if err := store.RevokeKey(ctx, args[0]); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "key %s revoked\n", args[0])
	return e.awaitInstances(ctx, store, "key "+args[0]+" revoked")
}

func (e *env) orderImport(fs *flag.FlagSet) adminFunc {
	member := fs.String("member", "", "the member the orders belong to (required)")
	return func(ctx context.Context, store certorder.Store, args []string) error {
		if *member == "" {
			return usageError("order import: --member is required")
		}
		r, err := e.openInput(args[0])
		if err != nil {
			return err
		}
		defer r.Close()
		n, err := store.ImportOrders(ctx, *member, certorder.DecodeOrders(r))
		if err != nil {
			return fmt.Errorf("nothing imported: %w", err)
		}
		fmt.Fprintf(e.stdout, "imported %d order(s) for member %s\n", n, *member)
		return nil
	}
}

func orderIDArg(s string) (int64, error) {
	id, ok := wire.ParseOrderID([]byte(s))
	if !ok {
		return 0, usageError("%q is not an order number", s)
	}
	return id, nil
}

func (e *env) orderRenew(ctx context.Context, store certorder.Store, args []string) error {
	oldID, err := orderIDArg(args[0])
	if err != nil {
		return err
	}
	newID, err := orderIDArg(args[1])
	if err != nil {
		return err
	}
	if err := store.RecordRenewal(ctx, oldID, newID); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "order %d renewed by order %d\n", oldID, newID)
	return nil
}

func (e *env) orderList(ctx context.Context, store certorder.Store, args []string) error {
	m, err := store.FindMember(ctx, args[0])
	if err != nil {
		return err
	}
	orders, err := store.ListOrders(ctx, certorder.OrderQuery{MemberID: m.ID})
	if err != nil {
		return err
	}
	now := time.Now()
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ORDER\tCOMMON NAME\tSTATUS\tVALID TILL\tDAYS\tRENEWED BY")
	for _, o := range orders {
		renewed := "-"
		if o.RenewedBy != 0 {
			renewed = strconv.FormatInt(o.RenewedBy, 10)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%s\n", o.ID, o.CommonName, o.Status, o.ValidTill,
			certorder.DaysRemaining(o.ValidTill, now), renewed)
	}
	return tw.Flush()
}

func (e *env) orderShow(ctx context.Context, store certorder.Store, args []string) error {
	id, err := orderIDArg(args[0])
	if err != nil {
		return err
	}
	o, err := store.FindOrder(ctx, id)
	if err != nil {
		return err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, wire.AppendOrderInfo(nil, o, time.Now()), "", "  "); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "member: %s\n%s\n", o.Member, strings.TrimSpace(out.String()))
	return nil
}

func (e *env) migrate(context.Context, certorder.Store, []string) error {
	// Opening the store applied the migrations.
	fmt.Fprintln(e.stdout, "schema is up to date")
	return nil
}

func (e *env) export(ctx context.Context, store certorder.Store, _ []string) error {
	return certorder.Export(ctx, store, e.stdout)
}

func (e *env) restore(ctx context.Context, store certorder.Store, args []string) error {
	r, err := e.openInput(args[0])
	if err != nil {
		return err
	}
	defer r.Close()
	if err := store.Restore(ctx, certorder.ReadExport(r)); err != nil {
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
	return func(ctx context.Context, store certorder.Store, _ []string) error {
		from, err := parseSince(*since, time.Now())
		if err != nil {
			return usageError("audit: --since %q: %v", *since, err)
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
			fmt.Fprintf(tw, "%s\t%q\t%q\t%s\t%s\t%s\n", a.Time.UTC().Format(time.RFC3339), a.Member, a.Action, order, outcome, a.ClientIP)
		}
		return tw.Flush()
	}
}

// parseSince reads a point in time: RFC 3339, YYYY-MM-DD (UTC), or a duration before now.
func parseSince(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	return time.Parse(certorder.DateLayout, s)
}
