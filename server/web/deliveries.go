package web

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/queue"
	"github.com/certorder/certorder/webhook"
)

// An endpoint's deliveries on its page: the rows, a test event, a delivery
// sent again (jobs of the queue, kind queue.KindWebhook).

// deliveryRow is one delivery of an endpoint's page.
type deliveryRow struct {
	ID          int64
	EventType   string
	Queued      time.Time
	State       string // in words
	StateClass  string // delivered, pending, failed
	Attempts    int
	LastAttempt time.Time // zero: not tried yet
	Status      string    // HTTP status, or why none came
	Latency     string
	Answer      string // the answer's start or the error, shortened
	AnswerFull  string // all of it, when shortened
	CanRedo     bool
}

// answerShown is how much of an answer or error the table shows before folding it.
const answerShown = 80

// classKeys name the attempt outcomes that come with no HTTP status.
var classKeys = map[string]string{
	string(webhook.ClassTimeout): "webhooks.class.timeout",
	string(webhook.ClassRefused): "webhooks.class.refused",
	string(webhook.ClassTLS):     "webhooks.class.tls",
	string(webhook.ClassBlocked): "webhooks.class.blocked",
	string(webhook.ClassDNS):     "webhooks.class.dns",
	string(webhook.ClassNetwork): "webhooks.class.network",
	string(webhook.ClassInvalid): "webhooks.class.invalid",
	"disabled":                   "webhooks.class.disabled", // the worker's, for an endpoint disabled meanwhile
}

func deliveryRowOf(cat *catalogue, d webhook.Delivery, endpointEnabled bool) deliveryRow {
	row := deliveryRow{ID: d.ID, EventType: d.EventType, Queued: d.CreatedAt, Attempts: d.Attempts, LastAttempt: d.LastAttempt,
		StateClass: d.State, CanRedo: endpointEnabled && d.State != webhook.StatePending}
	tried := !d.LastAttempt.IsZero()
	switch {
	case d.State == webhook.StateDelivered:
		row.State = cat.S("webhooks.delivery.delivered")
	case d.State == webhook.StateFailed:
		row.State = cat.S("webhooks.delivery.failed")
	case d.Attempts == 0:
		row.State = cat.S("webhooks.delivery.queued")
	default:
		row.State = cat.S("webhooks.delivery.retrying", cat.Moment(d.NextAttempt))
	}
	switch {
	case d.LastStatus > 0:
		row.Status = strconv.Itoa(d.LastStatus)
	case !tried:
		row.Status = cat.S("webhooks.delivery.not_tried")
	case classKeys[d.LastClass] != "":
		row.Status = cat.S(classKeys[d.LastClass])
	default:
		row.Status = d.LastClass
	}
	switch {
	case !tried || d.LastStatus == 0 && d.LastLatency == 0:
		row.Latency = cat.notStated()
	case d.LastLatency < time.Millisecond:
		row.Latency = cat.S("webhooks.latency.under_ms")
	default:
		row.Latency = cat.S("webhooks.latency.ms", d.LastLatency.Round(time.Millisecond).Milliseconds())
	}
	row.Answer = strings.TrimSpace(d.LastError)
	if d.State == webhook.StateDelivered && d.LastStatus > 0 && d.AnswerKept {
		// The receiver's own answer to a delivered message (an excerpt,
		// redacted by the worker), or that it had none.
		row.Answer = d.LastAnswer
		if row.Answer == "" {
			row.Answer = cat.S("webhook.answer.empty")
		}
	}
	if utf8.RuneCountInString(row.Answer) > answerShown {
		row.AnswerFull = row.Answer
		row.Answer = string([]rune(row.Answer)[:answerShown]) + "…"
	}
	return row
}

// testWebhook queues a test event to the endpoint.
func (h *handler) testWebhook(w http.ResponseWriter, r *http.Request, s *certorder.Session) {
	if !h.formOK(w, r, s) {
		return
	}
	ep, ok := h.memberEndpoint(w, r, s)
	if !ok {
		return
	}
	if !ep.Enabled {
		h.endpointPage(w, r, s, ep, http.StatusConflict, webhookData{Error: h.cat(r).S("webhook.error.disabled")})
		return
	}
	undo := h.allowSend(w, r, s, ep)
	if undo == nil {
		return
	}
	body, err := json.Marshal(webhook.TestEvent(h.cfg.Now()))
	if ep.Format == certorder.FormatSlack {
		body = webhook.ChatBody(webhook.TestMessage)
	}
	if err == nil {
		// The endpoint is the member's (memberEndpoint); the worker checks it
		// still is when it sends.
		_, err = h.store.Enqueue(r.Context(), webhook.NewDelivery(ep, webhook.TypeTest, webhook.NewMessageID(), body))
	}
	if err != nil {
		undo()
	}
	if errors.Is(err, certorder.ErrNotFound) { // deleted since
		h.notFound(w, r, s)
		return
	}
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	h.audit(r, s.Member, "web WebhookTest "+strconv.FormatInt(ep.ID, 10))
	http.Redirect(w, r, "/webhooks/"+strconv.FormatInt(ep.ID, 10)+"?tested=1", http.StatusSeeOther)
}

// allowSend takes one of the member's messages sent by hand, a test event
// or a redelivery: both put a message on the worker's places, so they
// share one limit (webhook.TestLimiter). Refused, it answers 429 and
// returns nil; else what gives the message back if it is not sent.
func (h *handler) allowSend(w http.ResponseWriter, r *http.Request, s *certorder.Session, ep certorder.Endpoint) (undo func()) {
	ok, wait, undo := h.tests.Allow(s.MemberID, h.cfg.Now())
	if !ok {
		w.Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds())+1))
		cat := h.cat(r)
		h.endpointPage(w, r, s, ep, http.StatusTooManyRequests, webhookData{
			Error: cat.S("webhook.error.send_limit", webhook.TestBurst, roundWait(cat, wait))})
	}
	return undo
}

// redeliver sends a finished delivery again, with the same webhook-id.
func (h *handler) redeliver(w http.ResponseWriter, r *http.Request, s *certorder.Session) {
	if !h.formOK(w, r, s) {
		return
	}
	ep, ok := h.memberEndpoint(w, r, s)
	if !ok {
		return
	}
	did, ok := positiveID(r.PathValue("delivery"))
	if !ok {
		h.notFound(w, r, s)
		return
	}
	cat := h.cat(r)
	if !ep.Enabled {
		h.endpointPage(w, r, s, ep, http.StatusConflict, webhookData{Error: cat.S("webhook.error.disabled")})
		return
	}
	undo := h.allowSend(w, r, s, ep)
	if undo == nil {
		return
	}
	err := h.store.RetryJob(r.Context(), queue.KindWebhook, s.MemberID, ep.ID, did)
	if err != nil {
		undo() // nothing queued: a delivery pending, gone, or the store down
	}
	switch {
	case errors.Is(err, certorder.ErrNotFound):
		h.notFound(w, r, s)
		return
	case errors.Is(err, certorder.ErrConflict):
		h.endpointPage(w, r, s, ep, http.StatusConflict, webhookData{Error: cat.S("webhook.error.pending", did)})
		return
	case err != nil:
		h.serverError(w, r, err)
		return
	}
	h.audit(r, s.Member, "web WebhookRedeliver "+strconv.FormatInt(ep.ID, 10)+"/"+strconv.FormatInt(did, 10))
	http.Redirect(w, r, "/webhooks/"+strconv.FormatInt(ep.ID, 10)+"?redelivered="+strconv.FormatInt(did, 10), http.StatusSeeOther)
}
