package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/printable"
	"github.com/certorder/certorder/internal/storekit"
	"github.com/certorder/certorder/webhook"
)

// The operator's webhook commands: admin webhook add|list|remove|rotate.

// endpointAdder is what admin webhook add writes to.
type endpointAdder interface {
	storekit.EndpointAdmin
	storekit.AuditStore
}

func (e *env) webhookAdd(fs *flag.FlagSet) adminFunc {
	events := fs.String("events", "", "comma-separated event types ("+strings.Join(webhook.EventTypes(), ", ")+"); default all")
	format := fs.String("format", certorder.FormatStandard, "standard (the signed Standard Webhooks payload) or slack (a readable line as Slack's incoming-webhook JSON, for Slack, Mattermost, Rocket.Chat)")
	var allowPrivate bool
	opts := []option{{"allow-private", "CERTORDER_WEBHOOK_ALLOW_PRIVATE",
		"allow http and private, loopback or link-local addresses, as serve --webhook-allow-private", boolVar(&allowPrivate, false)}}
	defineOptions(fs, opts)
	return role(func(ctx context.Context, store endpointAdder, args []string) error {
		if err := e.applyEnv(fs, opts); err != nil {
			return err
		}
		ep, err := webhook.NewEndpoint(args[1], strings.Split(*events, ","), allowPrivate)
		urlRefused := errors.Is(err, webhook.ErrInvalidURL) || errors.Is(err, webhook.ErrBlocked)
		if urlRefused && !allowPrivate && webhook.CheckURL(args[1], true) == nil {
			// Refused only for being http or on a private address.
			return usageError("webhook add: %v; an intranet or test endpoint (http, or a loopback, private or link-local address) "+
				"needs --allow-private here, and serve --webhook-allow-private to be delivered to", err)
		}
		if err != nil {
			return usageError("webhook add: %v", err)
		}
		if *format != certorder.FormatStandard && *format != certorder.FormatSlack {
			return usageError("webhook add: --format is standard or slack, not %q", *format)
		}
		ep.Format = *format
		if ep, err = store.AddEndpoint(ctx, args[0], ep); err != nil {
			return err
		}
		auditAdmin(ctx, store, ep.Member, "webhook_add")
		fmt.Fprintf(e.stdout, "endpoint %d added for member %s (%s, %s format). Its signing secret is shown this once:\n%s\n",
			ep.ID, ep.Member, eventsText(ep.EventTypes), ep.Format, ep.Secret)
		return nil
	})
}

func eventsText(types []string) string {
	if len(types) == 0 {
		return "all events"
	}
	return strings.Join(printable.Strings(types), ", ") // as stored: a restore may have brought anything
}

func (e *env) webhookList(ctx context.Context, store storekit.MemberWebhookStore, args []string) error {
	eps, err := store.Endpoints(ctx, args[0])
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tURL\tFORMAT\tEVENTS\tSTATE\tLAST SUCCESS")
	for _, ep := range eps {
		state := "enabled"
		if !ep.Enabled {
			state = "disabled: " + printable.String(ep.DisabledReason)
		} else if !ep.FailingSince.IsZero() {
			state = "failing since " + ep.FailingSince.UTC().Format(time.RFC3339)
		}
		last := "-"
		if !ep.LastSuccess.IsZero() {
			last = ep.LastSuccess.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", ep.ID, printable.String(ep.URL), certorder.EndpointFormat(ep.Format),
			eventsText(ep.EventTypes), state, last)
	}
	return tw.Flush()
}

// endpointArg is the endpoint an ID argument names.
func endpointArg(ctx context.Context, store storekit.EndpointAdmin, s string) (certorder.Endpoint, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 {
		return certorder.Endpoint{}, usageError("%q is not an endpoint ID (see admin webhook list)", s)
	}
	return store.FindEndpoint(ctx, id)
}

func (e *env) webhookRemove(ctx context.Context, store endpointAdder, args []string) error {
	ep, err := endpointArg(ctx, store, args[0])
	if err != nil {
		return err
	}
	id := ep.ID
	if err := store.DeleteEndpoint(ctx, id); err != nil {
		return err
	}
	auditAdmin(ctx, store, ep.Member, "webhook_remove")
	fmt.Fprintf(e.stdout, "endpoint %d of member %s removed\n", id, ep.Member)
	return nil
}

// rotationOverlap is how long a rotated-out secret still signs.
const rotationOverlap = 24 * time.Hour

func (e *env) webhookRotate(ctx context.Context, store endpointAdder, args []string) error {
	ep, err := endpointArg(ctx, store, args[0])
	if err != nil {
		return err
	}
	id := ep.ID
	secret, err := webhook.NewSecret()
	if err != nil {
		return err
	}
	until := time.Now().Add(rotationOverlap)
	if err := store.RotateSecret(ctx, id, secret, until); err != nil {
		return err
	}
	auditAdmin(ctx, store, ep.Member, "webhook_rotate")
	fmt.Fprintf(e.stdout, "endpoint %d has a new signing secret; messages are signed with the old one too until %s. The new secret, shown this once:\n%s\n",
		id, until.UTC().Format(time.RFC3339), secret)
	return nil
}

// auditAdmin records an operator's change in the audit trail. The change
// is made; a failure to record it is reported but does not undo it.
func auditAdmin(ctx context.Context, store storekit.AuditStore, member, action string) {
	store.AppendAudit(ctx, []certorder.AuditEntry{{Time: time.Now(), Member: member, Action: action, ClientIP: "admin"}})
}
