package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/certorder/certorder/ccwebhook"
	"github.com/certorder/certorder/digicert"
	"github.com/certorder/certorder/internal/acmeurl"
	"github.com/certorder/certorder/internal/printable"
	"github.com/certorder/certorder/internal/storekit"
	"github.com/certorder/certorder/queue"
)

// The operator's commands for CertCentral's webhook: admin sync webhook
// register|test|status. They call CertCentral (the account's key, as
// certorder sync does) and read what serve's receiver recorded in the
// store (--db: the store of the serve behind the endpoint).

// webhookUpstream declares the CertCentral options on a command's flags.
func webhookUpstream(fs *flag.FlagSet) (*upstreamConfig, []option) {
	up := &upstreamConfig{}
	var opts []option
	for _, o := range up.options() {
		if o.flag != "sync-max-fetches" {
			opts = append(opts, o)
		}
	}
	defineOptions(fs, opts)
	return up, opts
}

// ccClient makes the CertCentral client of a webhook command.
func (e *env) ccClient(cmd string, fs *flag.FlagSet, up *upstreamConfig, opts []option) (*digicert.Client, error) {
	if err := e.applyEnv(fs, opts); err != nil {
		return nil, err
	}
	return up.client(e, "admin "+cmd)
}

func (e *env) syncWebhookRegister(fs *flag.FlagSet) adminFunc {
	endpoint := fs.String("endpoint", "", "the public https URL of serve's receiver, ending in "+ccwebhook.Path+" (required)")
	secretFile := fs.String("secret-file", "", "the file serve's --certcentral-webhook-secret-file names (required)")
	wait := fs.Duration("wait", 30*time.Second, "how long to wait for the receiver to record the test event and the challenge token")
	up, opts := webhookUpstream(fs)
	return role(func(ctx context.Context, store ccwebhook.Store, _ []string) error {
		const cmd = "sync webhook register"
		if *endpoint == "" || *secretFile == "" {
			return usageError("%s: --endpoint URL and --secret-file FILE are required", cmd)
		}
		if err := acmeurl.Check(*endpoint); err != nil {
			return usageError("%s: --endpoint: %v", cmd, err)
		}
		secret, err := e.webhookSecret("admin "+cmd, "secret-file", *secretFile)
		if err != nil {
			return err
		}
		client, err := e.ccClient(cmd, fs, up, opts)
		if err != nil {
			return err
		}
		return e.registerWebhook(ctx, store, client, *endpoint, secret, *wait)
	})
}

// webhookConfig is the webhook certorder asks for.
func webhookConfig(endpoint, secret string) digicert.WebhookConfig {
	return digicert.WebhookConfig{Endpoint: endpoint, Secret: secret, Events: digicert.OrderEvents,
		Settings: digicert.WebhookSettings{InstantIssue: "1"}}
}

// registerWebhook creates or updates the webhook, has CertCentral test
// it, completes the challenge and activates it, saying each step.
func (e *env) registerWebhook(ctx context.Context, store ccwebhook.Store, client *digicert.Client, endpoint, secret string,
	wait time.Duration) error {
	out := e.stdout
	shown := redactURL(endpoint)
	cfg := webhookConfig(endpoint, secret)
	wh, err := client.Webhook(ctx)
	switch {
	case errors.Is(err, digicert.ErrNoWebhook):
		id, err := client.CreateWebhook(ctx, cfg)
		if errors.Is(err, digicert.ErrWebhookExists) { // made meanwhile: update it below
			wh, err = client.Webhook(ctx)
			if err == nil {
				err = e.updateWebhook(ctx, client, wh, cfg)
			}
		} else if err == nil {
			wh = digicert.Webhook{ID: id}
			fmt.Fprintf(out, "webhook %d: created for %s\n", id, shown)
		}
		if err != nil {
			return err
		}
	case err != nil:
		return err
	default:
		if err := e.updateWebhook(ctx, client, wh, cfg); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "  events %s; certificate_issued for certificates issued instantly too\n", strings.Join(cfg.Events, ", "))

	if err := e.testWebhook(ctx, store, client, endpoint, secret, wait); err != nil {
		return err
	}

	// What the receiver records is compared with what it had, not with
	// this machine's clock: serve may run on another.
	before, err := store.CertCentralWebhook(ctx)
	if err != nil {
		return err
	}
	if err := client.SendWebhookChallenge(ctx, wh.ID); err != nil {
		return fmt.Errorf("challenge: %w", err)
	}
	fmt.Fprintln(out, "challenge: CertCentral sent a token to the endpoint")
	rec, ok := waitRecorded(ctx, store, wait, func(w storekit.CertCentralWebhook) bool {
		return w.ChallengeToken != "" && (w.ChallengeToken != before.ChallengeToken || !w.ChallengeAt.Equal(before.ChallengeAt)) &&
			(w.ChallengeWebhookID == 0 || w.ChallengeWebhookID == wh.ID)
	})
	if !ok {
		return fmt.Errorf("challenge: no token recorded in this store (--db) within %v: is it the store of the serve behind %s, and did CertCentral reach it (admin sync webhook status shows the deliveries)?", wait, shown)
	}
	fmt.Fprintln(out, "challenge: certorder received the token")
	if err := client.CheckWebhookChallenge(ctx, wh.ID, rec.ChallengeToken); err != nil {
		return fmt.Errorf("challenge: %w", err)
	}
	fmt.Fprintln(out, "challenge: completed (CertCentral checked the token)")

	if wh, err = client.Webhook(ctx); err != nil {
		return err
	}
	if wh.Status != digicert.WebhookActive {
		if err := client.ActivateWebhook(ctx, wh.ID); err != nil {
			return fmt.Errorf("activating webhook %d: %w", wh.ID, err)
		}
		if wh, err = client.Webhook(ctx); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "webhook %d: %s\n", wh.ID, printable.String(wh.Status))
	if wh.Status != digicert.WebhookActive {
		return fmt.Errorf("webhook %d is %s, not active", wh.ID, printable.String(wh.Status))
	}
	return nil
}

// testWebhook has CertCentral send its test event to the endpoint, with
// the secret, and says whether certorder (the store at --db) recorded it.
func (e *env) testWebhook(ctx context.Context, store ccwebhook.Store, client *digicert.Client, endpoint, secret string,
	wait time.Duration) error {
	before, err := store.CertCentralWebhook(ctx)
	if err != nil {
		return err
	}
	shown := redactURL(endpoint)
	if err := client.TestWebhookEndpoint(ctx, endpoint, secret); err != nil {
		return fmt.Errorf("test event to %s: %w\nIs serve running there with --certcentral-webhook-secret-file (the same secret), reachable from CertCentral?", shown, err)
	}
	fmt.Fprintln(e.stdout, "test event: sent; the endpoint answered 2xx")
	if _, ok := waitRecorded(ctx, store, wait, func(w storekit.CertCentralWebhook) bool {
		return w.LastEvent == digicert.EventTest && !w.LastEventAt.Equal(before.LastEventAt)
	}); ok {
		fmt.Fprintln(e.stdout, "test event: certorder recorded it")
	} else {
		fmt.Fprintf(e.stdout, "test event: this store (--db) has no record of it; is it the store of the serve behind %s?\n", shown)
	}
	return nil
}

// updateWebhook points the account's webhook at the endpoint with the
// secret, the events and the settings.
func (e *env) updateWebhook(ctx context.Context, client *digicert.Client, wh digicert.Webhook, cfg digicert.WebhookConfig) error {
	if err := client.UpdateWebhook(ctx, wh.ID, cfg); err != nil {
		return err
	}
	was := ""
	if wh.Endpoint != cfg.Endpoint {
		was = " (was " + redactURL(wh.Endpoint) + "; a new endpoint is verified again)"
	}
	fmt.Fprintf(e.stdout, "webhook %d: updated for %s%s\n", wh.ID, redactURL(cfg.Endpoint), was)
	return nil
}

// waitRecorded reads what the receiver recorded until ok says it is there,
// at most wait.
func waitRecorded(ctx context.Context, store ccwebhook.Store, wait time.Duration, ok func(storekit.CertCentralWebhook) bool) (storekit.CertCentralWebhook, bool) {
	end := time.Now().Add(wait)
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		w, err := store.CertCentralWebhook(ctx)
		if err == nil && ok(w) {
			return w, true
		}
		if time.Now().After(end) {
			return storekit.CertCentralWebhook{}, false
		}
		select {
		case <-ctx.Done():
			return storekit.CertCentralWebhook{}, false
		case <-t.C:
		}
	}
}

// redactURL shows a URL without a password in it.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(a URL that does not parse)"
	}
	return printable.String(u.Redacted())
}

func (e *env) syncWebhookTest(fs *flag.FlagSet) adminFunc {
	secretFile := fs.String("secret-file", "", "send this secret in X-WEBHOOK-KEY; default: the webhook's own")
	wait := fs.Duration("wait", 10*time.Second, "how long to wait for the receiver to record the test event")
	up, opts := webhookUpstream(fs)
	return role(func(ctx context.Context, store ccwebhook.Store, _ []string) error {
		const cmd = "sync webhook test"
		secret := ""
		if *secretFile != "" {
			var err error
			if secret, err = e.webhookSecret("admin "+cmd, "secret-file", *secretFile); err != nil {
				return err
			}
		}
		client, err := e.ccClient(cmd, fs, up, opts)
		if err != nil {
			return err
		}
		wh, err := client.Webhook(ctx)
		if errors.Is(err, digicert.ErrNoWebhook) {
			return fmt.Errorf("the CertCentral account has no webhook: certorder admin sync webhook register --endpoint URL --secret-file FILE")
		}
		if err != nil {
			return err
		}
		if secret == "" {
			secret = wh.Secret
		}
		return e.testWebhook(ctx, store, client, wh.Endpoint, secret, *wait)
	})
}

func (e *env) syncWebhookStatus(fs *flag.FlagSet) adminFunc {
	limit := fs.Int("deliveries", 20, "how many of DigiCert's last deliveries to show")
	up, opts := webhookUpstream(fs)
	return role(func(ctx context.Context, store ccwebhook.Store, _ []string) error {
		client, err := e.ccClient("sync webhook status", fs, up, opts)
		if err != nil {
			return err
		}
		out := e.stdout
		wh, err := client.Webhook(ctx)
		if errors.Is(err, digicert.ErrNoWebhook) {
			fmt.Fprintln(out, "webhook: none in the CertCentral account (admin sync webhook register --endpoint URL --secret-file FILE)")
			return e.printReceived(ctx, store)
		}
		if err != nil {
			return err
		}
		instant := "off"
		if wh.Settings.InstantIssue == "1" {
			instant = "on"
		}
		events := make([]string, len(wh.Events))
		for i, ev := range wh.Events {
			events[i] = printable.String(ev)
		}
		fmt.Fprintf(out, "webhook %d: %s\n  endpoint: %s\n  events: %s\n  certificate_issued for instant issues: %s\n",
			wh.ID, printable.String(wh.Status), redactURL(wh.Endpoint), strings.Join(events, ", "), instant)
		for _, ev := range digicert.OrderEvents {
			if !slices.Contains(wh.Events, ev) {
				fmt.Fprintf(out, "  not subscribed to %s: admin sync webhook register subscribes it\n", ev)
			}
		}
		log, err := client.WebhookEvents(ctx, max(*limit, 1))
		if err != nil {
			fmt.Fprintf(out, "deliveries: CertCentral's event log could not be read: %v\n", err)
		} else if err := e.printDeliveries(ctx, store, log, *limit); err != nil {
			return err
		}
		return e.printReceived(ctx, store)
	})
}

// printDeliveries shows DigiCert's last deliveries, each beside what
// certorder has of it: the order's event job received about then.
func (e *env) printDeliveries(ctx context.Context, store ccwebhook.Store, log []digicert.WebhookDelivery, limit int) error {
	slices.SortStableFunc(log, func(a, b digicert.WebhookDelivery) int { return strings.Compare(a.Sent, b.Sent) })
	if len(log) > limit {
		log = log[len(log)-limit:]
	}
	if len(log) == 0 {
		fmt.Fprintln(e.stdout, "deliveries: none in CertCentral's event log")
		return nil
	}
	fmt.Fprintln(e.stdout, "last deliveries (CertCentral's event log, UTC) and what certorder received:")
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  SENT\tEVENT\tORDER\tANSWER\tCERTORDER")
	for _, d := range log {
		order, received := "-", "-"
		if d.Info.OrderID > 0 {
			order = fmt.Sprint(d.Info.OrderID)
			jobs, err := store.Jobs(ctx, queue.List{Kind: queue.KindCertCentralEvent, SubjectID: d.Info.OrderID, Limit: 20})
			if err != nil {
				return err
			}
			received = receivedText(jobs, d.Sent)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%d %s\t%s\n", printable.String(d.Sent), printable.String(d.Event), order, d.ResponseCode,
			printable.String(d.Status), received)
	}
	return tw.Flush()
}

// receivedText says which of an order's event jobs was received about
// when CertCentral sent the event (within a few minutes of the clocks'
// difference), and what became of it.
func receivedText(jobs []queue.Job, sent string) string {
	at, err := time.Parse("2006-01-02T15:04:05", sent)
	if err != nil {
		return "-"
	}
	for _, j := range jobs {
		if d := j.CreatedAt.Sub(at); d > -5*time.Minute && d < 5*time.Minute {
			state := map[string]string{queue.Done: "applied", queue.Pending: "waiting", queue.Running: "applying",
				queue.Failed: "failed"}[j.State]
			return fmt.Sprintf("received %s, %s", j.CreatedAt.UTC().Format(time.RFC3339), state)
		}
	}
	return "no record"
}

// printReceived says the last event the receiver recorded.
func (e *env) printReceived(ctx context.Context, store storekit.CertCentralWebhookStore) error {
	w, err := store.CertCentralWebhook(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, "certcentral webhook: "+lastEventText(w))
	return nil
}
