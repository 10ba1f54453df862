//lint:file-ignore ST1005 these errors are the simulator's answers to clients, whole sentences as DigiCert writes its messages.

package digicerttest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/certorder/certorder/digicert"
	"github.com/certorder/certorder/internal/acmeurl"
)

// The account's webhook, as the Services API's "Webhooks" pages describe
// it: one per account, created pending, made active by a test event and a
// challenge token sent back; once active, CertCentral POSTs the events it
// is subscribed to ("CertCentral event types") to its endpoint, the
// secret in X-WEBHOOK-KEY, and keeps an event log. The simulator sends
// to loopback endpoints only (http or https): it is made-up data.

// webhookState is the account's webhook.
type webhookState struct {
	digicert.Webhook
	verified     bool
	token        string
	tokenExpires time.Time
}

// sentEvent is an event waiting for the sender.
type sentEvent struct {
	name     string
	endpoint string
	secret   string
	body     []byte
	info     *eventInfo
}

type eventInfo struct {
	OrderID       int64 `json:"order_id"`
	CertificateID int64 `json:"certificate_id"`
}

// WebhookDelivery is an entry of the simulator's event log: what it sent
// and how the endpoint answered (0: no answer).
type WebhookDelivery struct {
	Event    string
	OrderID  int64
	Endpoint string
	Sent     time.Time
	Status   int
}

// challengeValidity is how long a challenge token is valid ("Send
// challenge token": 30 minutes).
const challengeValidity = 30 * time.Minute

// webhookTimeout bounds one POST to the endpoint.
const webhookTimeout = 10 * time.Second

// loopbackClient is the simulator's client for its events: it connects to
// loopback addresses only, whatever a host name resolves to.
func loopbackClient() *http.Client {
	d := &net.Dialer{Timeout: webhookTimeout, Control: func(_, address string, _ syscall.RawConn) error {
		host, _, err := net.SplitHostPort(address)
		if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
			return fmt.Errorf("digicerttest: %s is not a loopback address: the simulator sends events to loopback only", address)
		}
		return nil
	}}
	tr := &http.Transport{DialContext: d.DialContext, Proxy: nil}
	return &http.Client{Timeout: webhookTimeout, Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// registerWebhooks routes the webhook endpoints; their handlers run with
// s.mu held, as the others do.
func (s *Server) registerWebhooks(mux *http.ServeMux) {
	mux.HandleFunc("GET "+BasePath+"webhook", s.listWebhooks)
	mux.HandleFunc("POST "+BasePath+"webhook", s.createWebhook)
	mux.HandleFunc("PUT "+BasePath+"webhook/{id}", s.updateWebhook)
	mux.HandleFunc("POST "+BasePath+"webhook/test-endpoint", s.testWebhookEndpoint)
	mux.HandleFunc("PUT "+BasePath+"webhook/{id}/send-challenge", s.sendChallenge)
	mux.HandleFunc("PUT "+BasePath+"webhook/{id}/check-challenge", s.checkChallenge)
	mux.HandleFunc("PUT "+BasePath+"webhook/{id}/activate", s.setWebhookActive(true))
	mux.HandleFunc("PUT "+BasePath+"webhook/{id}/deactivate", s.setWebhookActive(false))
	mux.HandleFunc("GET "+BasePath+"webhook/event-logs", s.webhookEventLogs)
	mux.HandleFunc("GET "+BasePath+"webhook/{id}/event-logs", s.webhookEventLogs)
}

// checkEndpoint is Create webhook's rule (https), with the simulator's
// own: loopback only, where plain http is taken too.
func checkEndpoint(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return errors.New("The provided endpoint is not valid. Make sure the endpoint begins with https:// and try again.")
	}
	if !acmeurl.Loopback(u.Hostname()) {
		return errors.New("The provided endpoint is not valid: the simulator sends events to loopback addresses only.")
	}
	return nil
}

// readBody decodes a JSON request body into v; false: answered 400.
func readBody(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := json.NewDecoder(io.LimitReader(r.Body, 64<<10)).Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_input", "The request body is not the JSON documented.")
		return false
	}
	return true
}

// webhookOf answers 404 unless the path names the account's webhook.
func (s *Server) webhookOf(w http.ResponseWriter, r *http.Request) *webhookState {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if s.webhook == nil || err != nil || id != s.webhook.ID {
		writeError(w, http.StatusNotFound, "not_found|webhook", "A webhook with the given ID does not exist.")
		return nil
	}
	return s.webhook
}

func (s *Server) listWebhooks(w http.ResponseWriter, _ *http.Request) {
	if s.webhook == nil {
		writeError(w, http.StatusBadRequest, "webhook_invalid_account", "No webhook exists for the account.")
		return
	}
	writeJSON(w, http.StatusOK, map[string][]digicert.Webhook{"webhooks": {s.webhook.Webhook}})
}

// configure checks a Create or Update webhook body; "" when it is right.
func configure(cfg *digicert.WebhookConfig, hasSecret bool) (code, message string) {
	if err := checkEndpoint(cfg.Endpoint); err != nil {
		return "webhook_invalid_endpoint", err.Error()
	}
	if hasSecret && cfg.Secret != "" && len(cfg.Secret) < digicert.MinWebhookSecret {
		return "webhook_invalid_secret", "The secret must be at least 32 characters."
	}
	return "", ""
}

func (s *Server) createWebhook(w http.ResponseWriter, r *http.Request) {
	var cfg digicert.WebhookConfig
	if !readBody(w, r, &cfg) {
		return
	}
	if s.webhook != nil {
		writeError(w, http.StatusBadRequest, "webhook_configured_already",
			"A webhook already exists in the CertCentral account. To change the endpoint URL where you listen for webhook events, use the Update webhook endpoint API.")
		return
	}
	if code, msg := configure(&cfg, true); code != "" {
		writeError(w, http.StatusBadRequest, code, msg)
		return
	}
	if cfg.Events == nil {
		cfg.Events = []string{digicert.EventCertificateIssued}
	}
	s.nextWebhook++
	s.webhook = &webhookState{Webhook: digicert.Webhook{ID: s.nextWebhook, Endpoint: cfg.Endpoint, Secret: cfg.Secret,
		Events: slices.Clone(cfg.Events), Status: digicert.WebhookPending, Settings: cfg.Settings}}
	writeJSON(w, http.StatusCreated, map[string]int64{"webhook_id": s.webhook.ID})
}

func (s *Server) updateWebhook(w http.ResponseWriter, r *http.Request) {
	wh := s.webhookOf(w, r)
	if wh == nil {
		return
	}
	var raw map[string]json.RawMessage
	var cfg digicert.WebhookConfig
	body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<10))
	if json.Unmarshal(body, &raw) != nil || json.Unmarshal(body, &cfg) != nil {
		writeError(w, http.StatusBadRequest, "invalid_input", "The request body is not the JSON documented.")
		return
	}
	_, hasSecret := raw["secret"]
	if code, msg := configure(&cfg, hasSecret); code != "" {
		writeError(w, http.StatusBadRequest, code, msg)
		return
	}
	if cfg.Endpoint != wh.Endpoint {
		// "Updated endpoints must be verified before they receive events."
		wh.Endpoint, wh.Status, wh.verified = cfg.Endpoint, digicert.WebhookPending, false
	}
	if hasSecret { // "" removes it; absent leaves it
		wh.Secret = cfg.Secret
	}
	if _, ok := raw["events"]; ok {
		wh.Events = slices.Clone(cfg.Events)
	}
	if _, ok := raw["webhook_settings"]; ok {
		wh.Settings = cfg.Settings
	}
	w.WriteHeader(http.StatusNoContent)
}

// testWebhookEndpoint sends the test event at once and answers as the
// endpoint did: 200, or webhook_endpoint_error.
func (s *Server) testWebhookEndpoint(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Endpoint string `json:"endpoint"`
		Secret   string `json:"secret"`
	}
	if !readBody(w, r, &body) {
		return
	}
	if err := checkEndpoint(body.Endpoint); err != nil {
		writeError(w, http.StatusBadRequest, "webhook_invalid_endpoint", err.Error())
		return
	}
	ev := sentEvent{name: digicert.EventTest, endpoint: body.Endpoint, secret: body.Secret,
		body: []byte(`{"event":"` + digicert.EventTest + `"}`)}
	// Sent with s.mu let go: the endpoint may take its time.
	s.mu.Unlock()
	d := s.deliver(r.Context(), ev)
	s.mu.Lock()
	s.eventLog = append(s.eventLog, d)
	if d.status < 200 || d.status > 299 {
		writeError(w, http.StatusBadRequest, "webhook_endpoint_error",
			"The provided endpoint is not responding or accepting requests. Make sure your webhook listener is configured correctly and try again.")
		return
	}
	w.WriteHeader(http.StatusOK)
}

func (s *Server) sendChallenge(w http.ResponseWriter, r *http.Request) {
	wh := s.webhookOf(w, r)
	if wh == nil {
		return
	}
	b := make([]byte, 16)
	rand.Read(b)
	wh.token, wh.tokenExpires = hex.EncodeToString(b), s.now().Add(challengeValidity)
	body, _ := json.Marshal(map[string]any{"event": digicert.EventChallenge,
		"data": map[string]any{"token": wh.token, "webhook_id": wh.ID}})
	s.queueEvent(sentEvent{name: digicert.EventChallenge, endpoint: wh.Endpoint, secret: wh.Secret, body: body})
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) checkChallenge(w http.ResponseWriter, r *http.Request) {
	wh := s.webhookOf(w, r)
	if wh == nil {
		return
	}
	var body struct {
		Token string `json:"token"`
	}
	if !readBody(w, r, &body) {
		return
	}
	if wh.token == "" || body.Token != wh.token || !s.now().Before(wh.tokenExpires) {
		writeError(w, http.StatusBadRequest, "webhook_invalid_token",
			"The token is invalid, expired, or missing from the request. Make sure the token in your request payload matches the token your webhook listener recieved. To send a new token, use the Send challenge token API endpoint.")
		return
	}
	wh.token, wh.verified, wh.Status = "", true, digicert.WebhookActive
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) setWebhookActive(active bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		wh := s.webhookOf(w, r)
		if wh == nil {
			return
		}
		if !wh.verified {
			writeError(w, http.StatusBadRequest, "webhook_invalid_action",
				"The webhook cannot be activated/deactivated. Make sure you have completed the verification challenge and try again.")
			return
		}
		wh.Status = digicert.WebhookInactive
		if active {
			wh.Status = digicert.WebhookActive
		}
		w.WriteHeader(http.StatusNoContent)
	}
}

// webhookEventLogs serves the event log, oldest first, with offset and
// limit and the page object.
func (s *Server) webhookEventLogs(w http.ResponseWriter, r *http.Request) {
	if id := r.PathValue("id"); id != "" && s.webhookOf(w, r) == nil {
		return
	}
	offset, limit, ok := paging(w, r.URL.Query(), 1000)
	if !ok {
		return
	}
	type entry struct {
		Event    string     `json:"event_name"`
		Info     *eventInfo `json:"event_info,omitempty"`
		Status   string     `json:"request_status"`
		Sent     string     `json:"request_sent_time"`
		Answered string     `json:"response_received_time"`
		Code     int        `json:"response_code"`
	}
	events := []entry{}
	for i := offset; i < len(s.eventLog) && i < offset+limit; i++ {
		d := s.eventLog[i]
		e := entry{Event: d.name, Info: d.info, Status: "success", Sent: d.sent.UTC().Format("2006-01-02T15:04:05"),
			Answered: d.answered.UTC().Format("2006-01-02T15:04:05"), Code: d.status}
		if d.status < 200 || d.status > 299 {
			e.Status = "failure"
		}
		events = append(events, e)
	}
	writeJSON(w, http.StatusOK, map[string]any{"events": events,
		"page": digicert.Page{Total: len(s.eventLog), Limit: limit, Offset: offset}})
}

// delivery is what became of an event sent.
type delivery struct {
	sentEvent
	sent, answered time.Time
	status         int
}

// announce sends the event CertCentral sends for an order's change, if
// any, when the webhook is active and subscribed to it: the one place the
// simulator's orders tell of their changes. before is the order as it was.
// It returns the event queued and its endpoint, or why none was: the
// change has no event, or the webhook is missing, not active or not
// subscribed. Called with s.mu held.
func (s *Server) announce(o *order, before order) (event, endpoint, none string) {
	name := ""
	wh := s.webhook
	switch {
	case o.status == "issued" && (before.status != "issued" || !o.issued.Equal(before.issued)):
		name = digicert.EventCertificateIssued
		instant := !o.issued.After(o.created)
		if instant && wh != nil && wh.Settings.InstantIssue != "1" {
			// "only for certificates not issued the instant the order is created"
			return "", "", "the webhook is not told of certificates issued the instant their order is placed (instant_issue_webhook_notification)"
		}
	case o.status == "revoked" && before.status != "revoked":
		name = digicert.EventCertificateRevoked
	case o.status == "rejected" && before.status != "rejected":
		name = digicert.EventOrderRejected
	}
	switch {
	case name == "":
		return "", "", "CertCentral sends no event for this change"
	case wh == nil:
		return "", "", "the account has no webhook"
	case wh.Status != digicert.WebhookActive:
		return "", "", "the account's webhook is " + wh.Status + ", not active"
	case !slices.Contains(wh.Events, name):
		return "", "", "the account's webhook is not subscribed to " + name
	}
	info := &eventInfo{OrderID: o.id, CertificateID: o.certID}
	body, _ := json.Marshal(map[string]any{"event": name, "data": info})
	s.queueEvent(sentEvent{name: name, endpoint: wh.Endpoint, secret: wh.Secret, body: body, info: info})
	return name, wh.Endpoint, ""
}

// queueEvent hands an event to the sender, which sends the events one at
// a time in order, and runs only while there are some. Called with s.mu
// held.
func (s *Server) queueEvent(ev sentEvent) {
	s.outbox = append(s.outbox, ev)
	if s.sending {
		return
	}
	s.sending = true
	go func() {
		for {
			s.mu.Lock()
			if len(s.outbox) == 0 {
				s.sending = false
				s.mu.Unlock()
				return
			}
			ev := s.outbox[0]
			s.outbox = s.outbox[1:]
			s.mu.Unlock()
			d := s.deliver(context.Background(), ev)
			s.mu.Lock()
			s.eventLog = append(s.eventLog, d)
			s.mu.Unlock()
		}
	}()
}

// deliver POSTs an event to its endpoint, without s.mu held.
func (s *Server) deliver(ctx context.Context, ev sentEvent) delivery {
	d := delivery{sentEvent: ev, sent: s.now()}
	defer func() { d.answered = s.now() }()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ev.endpoint, bytes.NewReader(ev.body))
	if err != nil {
		return d
	}
	req.Header.Set("Content-Type", "application/json")
	if ev.secret != "" {
		req.Header.Set("X-WEBHOOK-KEY", ev.secret)
	}
	resp, err := s.webhookClient.Do(req)
	if err != nil {
		return d
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	d.status = resp.StatusCode
	return d
}

// WebhookDeliveries returns what the simulator sent to the webhook's
// endpoint, oldest first.
func (s *Server) WebhookDeliveries() []WebhookDelivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]WebhookDelivery, len(s.eventLog))
	for i, d := range s.eventLog {
		out[i] = WebhookDelivery{Event: d.name, Endpoint: d.endpoint, Sent: d.sent, Status: d.status}
		if d.info != nil {
			out[i].OrderID = d.info.OrderID
		}
	}
	return out
}

// Webhook returns the account's webhook as List webhooks gives it; false
// when there is none.
func (s *Server) Webhook() (digicert.Webhook, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.webhook == nil {
		return digicert.Webhook{}, false
	}
	wh := s.webhook.Webhook
	wh.Events = slices.Clone(wh.Events)
	return wh, true
}
