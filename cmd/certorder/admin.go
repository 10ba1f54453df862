package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/printable"
	"github.com/certorder/certorder/internal/storekit"
	"github.com/certorder/certorder/stores"
)

// adminFunc does one operator command on the store it opened.
type adminFunc func(ctx context.Context, store stores.Store, args []string) error

// role makes an adminFunc of a command that takes only the role of the
// store it uses (storekit.MemberStore, ...), which every store has.
func role[S any](f func(ctx context.Context, store S, args []string) error) adminFunc {
	return func(ctx context.Context, store stores.Store, args []string) error {
		s, ok := any(store).(S)
		if !ok { // an optional role (storekit.BackupStore) this store lacks
			return fmt.Errorf("%w: the store %T cannot do this", errors.ErrUnsupported, store)
		}
		return f(ctx, s, args)
	}
}

// adminCommand is one operator command: its name, positional arguments and
// summary for the usage, and setup, which declares its flags and returns
// what it does.
type adminCommand struct {
	name    string // one word (migrate) or two (member add)
	args    string // usage of the positional arguments and flags
	summary string
	nargs   int
	// creates: the command makes the store if there is none. Every other
	// command refuses a store that does not exist, so that a mistyped --db
	// is an error, not a new empty store.
	creates bool
	setup   func(fs *flag.FlagSet) adminFunc
}

// optionalArgs is how many positional arguments the command takes beyond
// nargs: those its usage shows in brackets, such as [ADDRESS], so that the
// usage and the parsing cannot disagree.
func (c adminCommand) optionalArgs() int {
	n := 0
	for _, w := range strings.Fields(c.args) {
		if inner, ok := strings.CutPrefix(w, "["); ok && !strings.HasPrefix(inner, "-") && strings.HasSuffix(inner, "]") &&
			strings.ToUpper(inner) == inner {
			n++
		}
	}
	return n
}

func noFlags[S any](f func(ctx context.Context, store S, args []string) error) func(*flag.FlagSet) adminFunc {
	return func(*flag.FlagSet) adminFunc { return role(f) }
}

// adminCommands lists every operator command, in the usage's order.
func (e *env) adminCommands() []adminCommand {
	return []adminCommand{
		{"member add", "NAME", "create a member (NAME is its AccessName)", 1, false, noFlags(e.memberAdd)},
		{"member list", "", "list members", 0, false, noFlags(e.memberList)},
		{"member disable", "NAME", "refuse the member's requests from the next one on", 1, false, noFlags(e.memberSetDisabled(true))},
		{"member enable", "NAME", "accept them again", 1, false, noFlags(e.memberSetDisabled(false))},
		{"member keys", "NAME on|off", "let the member create and revoke its own keys on the web page, or not", 2, false, noFlags(e.memberKeys)},
		{"member link", "NAME --container ID", "give the member the orders of a CertCentral division (certorder sync)", 1, false, e.memberLink(true)},
		{"member unlink", "NAME --container ID", "stop that; the member keeps the orders it has", 1, false, e.memberLink(false)},
		{"key create", "NAME [--label TEXT]", "create an API key; printed once, on the last line", 1, false, e.keyCreate},
		{"key list", "NAME", "list a member's keys (never the secrets)", 1, false, noFlags(e.keyList)},
		{"key revoke", "KEYID|KEY", "refuse the key from the next request on", 1, false, noFlags(e.keyRevoke)},
		{"order import", "[MEMBER] FILE|- [--dry-run]", "import one order object or an array of them for MEMBER (or --member NAME), all or none; --dry-run checks and counts, writes nothing", 1, false, e.orderImport},
		{"order renew", "OLD NEW", "record that order NEW renewed order OLD", 2, false, noFlags(e.orderRenew)},
		{"order list", "NAME [--next-step STEP]", "list a member's orders with their next step", 1, false, e.orderList},
		{"order show", "ID [--summary]", "print an order as OrderInfo answers it", 1, false, e.orderShow},
		{"order find", "--serial S|--thumbprint T|--from FILE [--json|--csv]",
			"which order, member and order status each certificate belongs to, and whether it is current", 0, false, e.orderFind},
		{"audit", "[--member NAME] [--since TIME] [--limit N]",
			"list API calls, newest first (TIME: RFC 3339, YYYY-MM-DD, or a duration ago: 24h)", 0, false, e.audit},
		{"webhook add", "MEMBER URL [--events TYPES] [--format standard|slack] [--allow-private]", "add a webhook endpoint; its signing secret alone on the last line", 2, false, e.webhookAdd},
		{"webhook list", "MEMBER", "list a member's endpoints", 1, false, noFlags(e.webhookList)},
		{"webhook remove", "ID", "remove an endpoint and its deliveries", 1, false, noFlags(e.webhookRemove)},
		{"webhook rotate", "ID", "new signing secret; the old one signs too for 24 hours", 1, false, noFlags(e.webhookRotate)},
		{"notice add", "MEMBER ADDRESS [--lang en|ja] [--events TYPES]", "e-mail the member's events to ADDRESS (active at once)", 2, false, e.noticeAdd},
		{"notice list", "MEMBER", "list a member's notice addresses, their state and last failure", 1, false, noFlags(e.noticeList)},
		{"notice remove", "ID", "remove a notice address", 1, false, noFlags(e.noticeRemove)},
		{"notice test", "MEMBER [ADDRESS] [--smtp-addr HOST:PORT ...]", "send a test message now, to ADDRESS or each active address of the member, through the relay serve's --smtp-* flags name; say what failed", 1, false, e.noticeTest},
		{"notice unblock", "ADDRESS", "let ADDRESS be added again after its owner refused certorder's messages", 1, false, noFlags(e.noticeUnblock)},
		{"sync status", "", "the CertCentral sync's cursor, last runs, last webhook event, links and unassigned orders", 0, false, noFlags(e.syncStatus)},
		{"sync webhook register", "--endpoint URL --secret-file FILE", "point CertCentral's webhook at serve's receiver, test it, complete its challenge, activate it", 0, false, e.syncWebhookRegister},
		{"sync webhook test", "[--secret-file FILE]", "have CertCentral send its test event to the webhook's endpoint", 0, false, e.syncWebhookTest},
		{"sync webhook status", "[--deliveries N]", "CertCentral's webhook (never its secret), its last deliveries and what certorder received", 0, false, e.syncWebhookStatus},
		{"migrate", "", "create the store, or apply its schema migrations; nothing else", 0, true, noFlags(e.migrate)},
		{"export", "", "write every member, key hash, order, renewal and webhook endpoint (with its signing secrets) as JSON lines", 0, false, noFlags(e.export)},
		{"restore", "FILE|-", "load an export into an empty store (created if need be), all or nothing", 1, true, noFlags(e.restore)},
		{"backup", "FILE [--audit]", "copy a live SQLite store to the new FILE (PostgreSQL: pg_dump)", 1, false, e.backup},
	}
}

// isAdminGroup reports whether words are the first of longer commands
// (member, key, sync webhook, ...), from the table.
func (e *env) isAdminGroup(word string) bool {
	return slices.ContainsFunc(e.adminCommands(), func(c adminCommand) bool { return strings.HasPrefix(c.name, word+" ") })
}

// adminUsage lists the operator commands whose name starts with prefix
// ("" for all).
func (e *env) adminUsage(prefix string) string {
	var b strings.Builder
	b.WriteString("usage: certorder admin <command> [--db DSN] [arguments]\n\n")
	for _, c := range e.adminCommands() {
		if strings.HasPrefix(c.name+" ", prefix) {
			writeUsageLine(&b, c.name, c.args, c.summary)
		}
	}
	b.WriteString("\nThe store is --db, or CERTORDER_DB, or ./certorder.db: a SQLite file path or a\n" +
		"postgres:// URL. Only migrate and restore create a store that does not exist;\n" +
		"the others refuse it. Run 'certorder admin <command> --help' for its flags.\n")
	return b.String()
}

func isHelpFlag(s string) bool {
	return s == "-h" || s == "-help" || s == "--help" || s == "--h" || s == "help"
}

func (e *env) admin(ctx context.Context, args []string) error {
	if len(args) == 0 {
		fmt.Fprint(e.stderr, e.adminUsage(""))
		return usageError("admin: no command given")
	}
	if isHelpFlag(args[0]) {
		return &helpShown{usage: e.adminUsage("")}
	}
	// A command is one word (migrate) or two (member add).
	var cmd adminCommand
	words := 0
	for _, c := range e.adminCommands() {
		n := len(strings.Fields(c.name))
		if n <= len(args) && c.name == strings.Join(args[:n], " ") {
			cmd, words = c, n
			break
		}
	}
	if words == 0 {
		// The longest run of leading words that is a group (member, sync
		// webhook): its list, asked for or missing a command.
		g := 0
		for g < len(args) && e.isAdminGroup(strings.Join(args[:g+1], " ")) {
			g++
		}
		if group := strings.Join(args[:g], " "); g > 0 {
			switch {
			case len(args) > g && isHelpFlag(args[g]):
				return &helpShown{usage: e.adminUsage(group + " ")}
			case len(args) == g || strings.HasPrefix(args[g], "-"): // the command left out
				fmt.Fprint(e.stderr, e.adminUsage(group+" "))
				return usageError("admin %s: which one? see the list above", group)
			}
		}
		// A word that is no command there: one line, with the closest.
		return e.unknownCommand(append([]string{"admin"}, args[:g]...), args[g])
	}
	fs := e.commandFlags("admin "+cmd.name, cmd.args+" [--db DSN]", cmd.summary)
	var db string
	opts := []option{dbOption(&db)}
	defineOptions(fs, opts)
	do := cmd.setup(fs)
	pos, err := parseRange(fs, args[words:], cmd.nargs, cmd.nargs+cmd.optionalArgs())
	if err != nil {
		return err
	}
	if err := e.applyEnv(fs, opts); err != nil {
		return err
	}
	if err := checkDSN("admin "+cmd.name, db); err != nil {
		return err
	}
	if cmd.name == "backup" && stores.IsPostgres(db) {
		return usageError(backupPostgres)
	}
	open := stores.OpenExisting
	if cmd.creates {
		open = stores.Open
	}
	created := cmd.creates && errors.Is(stores.Exists(ctx, db), stores.ErrNoStore)
	store, err := open(ctx, db)
	if errors.Is(err, stores.ErrNoStore) {
		return &exitErr{code: exitUsage, err: fmt.Errorf("admin %s: %w\n"+
			"Check --db (or CERTORDER_DB); to create a new store there, run: certorder admin migrate --db %s",
			cmd.name, err, shellQuote(redactDSN(db)))}
	}
	if err != nil {
		return fmt.Errorf("admin %s: opening the store %s: %w", cmd.name, redactDSN(db), err)
	}
	defer store.Close()
	if created {
		// Said first: a restore that then fails leaves the new store, empty.
		fmt.Fprintf(e.stdout, "created a new, empty certorder store at %s\n", redactDSN(db))
	}
	// The commands that call CertCentral (sync webhook ...) name the URL to
	// check when it cannot be reached.
	return unreachableHint("admin "+cmd.name, do(ctx, store, pos))
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-:@+=,", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func (e *env) memberAdd(ctx context.Context, store storekit.MemberStore, args []string) error {
	if err := certorder.ValidMemberName(args[0]); err != nil {
		return usageError("member add: %v", err)
	}
	if _, err := store.AddMember(ctx, args[0]); errors.Is(err, certorder.ErrConflict) {
		return fmt.Errorf("member %s already exists", args[0])
	} else if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "member %s added\n", args[0])
	return nil
}

// memberLister is what admin member list reads.
type memberLister interface {
	storekit.MemberStore
	linkReader
}

func (e *env) memberList(ctx context.Context, store memberLister, _ []string) error {
	ms, err := store.Members(ctx)
	if err != nil {
		return err
	}
	links, err := linksByMember(ctx, store)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSTATUS\tWEB KEYS\tCREATED\tDIVISIONS")
	for _, m := range ms {
		status, keys := "enabled", "on"
		if m.Disabled {
			status = "disabled"
		}
		if m.SelfServiceKeysOff {
			keys = "off" // admin member keys NAME off
		}
		divisions := strings.Join(links[m.ID], ",")
		if divisions == "" {
			divisions = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", m.Name, status, keys, m.CreatedAt.Format(time.RFC3339), divisions)
	}
	return tw.Flush()
}

func (e *env) memberSetDisabled(disabled bool) adminFunc {
	return role(func(ctx context.Context, store storekit.MemberStore, args []string) error {
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
	})
}

// memberKeys turns a member's self-service keys on the web page on or off.
func (e *env) memberKeys(ctx context.Context, store storekit.MemberStore, args []string) error {
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
	return role(func(ctx context.Context, store storekit.KeyStore, args []string) error {
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
	})
}

// keyLister is what admin key list reads.
type keyLister interface {
	storekit.KeyStore
	KeysLastUsed(ctx context.Context, keyIDs []string) (map[string]time.Time, error)
}

func (e *env) keyList(ctx context.Context, store keyLister, args []string) error {
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
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", k.ID, printable.String(k.Label), k.CreatedAt.Format(time.RFC3339), status)
	}
	return tw.Flush()
}

// keyRevoke takes a key ID or a whole key; a whole key is revoked by its
// ID, and no message repeats what was given, which may hold a secret.
func (e *env) keyRevoke(ctx context.Context, store storekit.KeyStore, args []string) error {
	id := args[0]
	if strings.HasPrefix(id, certorder.KeyPrefix) {
		var ok bool
		if id, ok = certorder.KeyID(args[0]); !ok {
			return usageError("key revoke: the argument starts like an API key but is not one; give the key ID (12 hex digits, see admin key list) or the whole key")
		}
	} else if _, ok := certorder.KeyID(certorder.KeyPrefix + id + "_x"); !ok {
		return usageError("key revoke: the argument is not a key ID (12 hex digits, see admin key list) or a whole key")
	}
	if err := store.RevokeKey(ctx, id); errors.Is(err, certorder.ErrNotFound) {
		return fmt.Errorf("key revoke: no key with ID %s", id)
	} else if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "key %s revoked\n", id)
	return e.awaitInstances(ctx, store, "key "+id+" revoked")
}
