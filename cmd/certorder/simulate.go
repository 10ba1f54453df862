package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/certorder/certorder/digicert/digicerttest"
	"github.com/certorder/certorder/internal/acmeurl"
	"github.com/certorder/certorder/internal/printable"
)

const simulateSummary = "change an order of a running dev simulator, as CertCentral would"

const simulateHelp = simulateSummary + `

ACTION is one of:
  issue    issue a pending order's certificate, or a pending reissue's
  revoke   revoke an issued order's certificate (status revoked)
  reissue  a new certificate for the same order, within its plan: issued
           at once, or reissue_pending with --pending
  renew    a new order that replaces ORDER (ORDER gets is_renewed and
           renewed_order_id): issued at once, or pending with --pending

The next certorder sync finds the change. With the account's webhook
registered (certorder admin sync webhook register), the simulator also POSTs
the event CertCentral sends for it at once (certificate_issued,
certificate_revoked), as CertCentral does; it sends none for a reissue
started or an order placed. --simulator (by default CERTORDER_DIGICERT_URL,
else http://127.0.0.1:8099/) names the simulator, on loopback: only its host
and port are used. docs/SYNC.md, "Try it".`

// defaultSimulator is where dev simulator listens by default.
const defaultSimulator = "http://127.0.0.1:8099/"

// simulate is "dev simulate ACTION ORDER": one change, asked of a running
// simulator over its control endpoint (digicerttest.ControlPath).
func (e *env) simulate(ctx context.Context, args []string) error {
	const cmd = "dev simulate"
	fs := e.commandFlags(cmd, strings.Join(digicerttest.SimulateActions, "|")+" ORDER [flags]", simulateHelp)
	simFlag := fs.String("simulator", "", "the simulator's URL, on loopback (default CERTORDER_DIGICERT_URL, else "+defaultSimulator+")")
	pending := fs.Bool("pending", false, "reissue, renew: leave the new certificate pending (dev simulate issue issues it)")
	pos, err := parse(fs, args, 2)
	if err != nil {
		return err
	}
	action := pos[0]
	if !slices.Contains(digicerttest.SimulateActions, action) {
		return usageError("%s: %q is not a change: want one of %s", cmd, printable.Cut(action, 40), strings.Join(digicerttest.SimulateActions, ", "))
	}
	id, err := strconv.ParseInt(pos[1], 10, 64)
	if err != nil || id <= 0 {
		return usageError("%s: ORDER %q is not an order number (a positive integer, such as 100006)", cmd, printable.Cut(pos[1], 40))
	}
	if *pending && action != digicerttest.SimulateReissue && action != digicerttest.SimulateRenew {
		return usageError("%s: --pending is for reissue and renew only", cmd)
	}
	raw, from := *simFlag, "--simulator"
	if raw == "" {
		if raw, from = e.getenv("CERTORDER_DIGICERT_URL"), "CERTORDER_DIGICERT_URL"; raw == "" {
			raw, from = defaultSimulator, "the default"
		}
	}
	u, err := url.Parse(raw)
	if err == nil {
		raw = u.Redacted() // a password in the URL is never printed
	}
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usageError("%s: %s %q is not an http:// URL", cmd, from, printable.Cut(raw, 200))
	}
	if !acmeurl.Loopback(u.Hostname()) {
		return usageError("%s: %s %s is not on loopback: the simulator (certorder dev simulator) listens on loopback only, and this command changes made-up orders there, never CertCentral's (--simulator names it)",
			cmd, from, printable.Cut(raw, 200))
	}
	base := u.Scheme + "://" + u.Host
	target := fmt.Sprintf("%s%s%d/%s", base, digicerttest.ControlPath, id, action)
	body, _ := json.Marshal(map[string]bool{"pending": *pending})

	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	req.Header.Set("Content-Type", "application/json")
	client := &http.Client{Transport: &http.Transport{Proxy: nil, DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("%s: no simulator answered at %s (%s; is certorder dev simulator running there?): %w", cmd, base, from, err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return fmt.Errorf("%s: reading the simulator's answer: %w", cmd, err)
	}
	if resp.StatusCode != http.StatusOK {
		var refusal struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(answer, &refusal) != nil || refusal.Error == "" {
			return fmt.Errorf("%s: %s answered %s, not as a simulator does: is certorder dev simulator running there?", cmd, base, resp.Status)
		}
		return fmt.Errorf("%s %s %d: refused: %s", cmd, action, id, printable.Cut(refusal.Error, 500))
	}
	var c digicerttest.Change
	if err := json.Unmarshal(answer, &c); err != nil {
		return fmt.Errorf("%s: the simulator's answer: %w", cmd, err)
	}
	for _, line := range changeLines(c) {
		fmt.Fprintln(e.stdout, line)
	}
	return nil
}

// changeLines tells of a change, for dev simulate and the simulator's
// own output: what became of the order, then what the webhook was told.
func changeLines(c digicerttest.Change) []string {
	cert := fmt.Sprintf("certificate %d", c.CertificateID)
	if c.SerialNumber != "" {
		cert += fmt.Sprintf(" (serial %s, valid till %s)", c.SerialNumber, c.ValidTill)
	}
	var what string
	switch {
	case c.Action == digicerttest.SimulateRenew && c.Status == "pending":
		what = fmt.Sprintf("order %d: renewed by order %d, pending (dev simulate issue %d issues it)", c.OrderID, c.RenewalID, c.RenewalID)
	case c.Action == digicerttest.SimulateRenew:
		what = fmt.Sprintf("order %d: renewed by order %d, %s: %s", c.OrderID, c.RenewalID, c.Status, cert)
	case c.Action == digicerttest.SimulateReissue && c.Status == "reissue_pending":
		what = fmt.Sprintf("order %d: reissue pending, new %s (dev simulate issue %d issues it)", c.OrderID, cert, c.OrderID)
	case c.Action == digicerttest.SimulateReissue:
		what = fmt.Sprintf("order %d: reissued, new %s", c.OrderID, cert)
	default:
		what = fmt.Sprintf("order %d: %s, %s", c.OrderID, c.Status, cert)
	}
	event := "webhook: no event (" + c.NoEvent + "); the next certorder sync finds the change"
	if c.Event != "" {
		event = fmt.Sprintf("webhook: event %s queued for %s", c.Event, c.EventEndpoint)
	}
	return []string{printable.Cut(what, 500), printable.Cut(event, 500)}
}
