package web

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/queue"
	"github.com/certorder/certorder/webhook"
)

// The member's webhook endpoints: list, add (the signing secret shown
// once), send a test event, disable, enable, delete after a confirmation,
// and the latest deliveries, each of which can be sent again. Every store
// call but the list and the add is scoped to the session's member in the
// store's query, so another member's endpoint is "not found" like a
// missing one.

// MaxEndpoints bounds a member's endpoints: every event goes to each one.
const MaxEndpoints = 10

// deliveriesShown is how many of an endpoint's latest deliveries its page lists.
const deliveriesShown = 20

// memberDisabled is the reason recorded when the member disables an
// endpoint here; admin webhook list shows it as it is.
const memberDisabled = "disabled by the member on the web page"

// The reasons the delivery worker records when it disables an endpoint
// (webhook.Worker): recognised to say them in the page's language.
const (
	goneReason         = "the endpoint answered 410 Gone"
	failingReasonStart = "no delivery succeeded since "
)

// eventChoice is one event type of the add form.
type eventChoice struct {
	Name, What string
	Checked    bool
}

// eventKeys say what each event type is about.
var eventKeys = map[string]string{
	webhook.TypeOrderRenewed:       "webhooks.event.order_renewed",
	webhook.TypeOrderStatusChanged: "webhooks.event.order_status_changed",
	webhook.TypeOrderReissued:      "webhooks.event.order_reissued",
	webhook.TypeOrderExpiring:      "webhooks.event.order_expiring",
	webhook.TypeOrderPlanEnding:    "webhooks.event.order_plan_ending",
}

// endpointRow is an endpoint as the pages show it; never its secret.
type endpointRow struct {
	ID          int64
	URL         string
	Format      string   // in words
	Events      []string // empty: all events
	Enabled     bool
	State       string // in words: enabled, failing since ..., disabled and why
	StateClass  string // ok, failing, disabled
	LastSuccess time.Time
	Created     time.Time
}

// endpointRowOf says an endpoint's state in the request's language.
func endpointRowOf(cat *catalogue, ep certorder.Endpoint) endpointRow {
	row := endpointRow{ID: ep.ID, URL: ep.URL, Format: cat.S(formatKeys[certorder.EndpointFormat(ep.Format)].name), Events: ep.EventTypes, Enabled: ep.Enabled,
		LastSuccess: ep.LastSuccess, Created: ep.CreatedAt}
	switch {
	case ep.Enabled && ep.FailingSince.IsZero():
		row.State, row.StateClass = cat.S("webhooks.state.enabled"), "ok"
	case ep.Enabled:
		row.State, row.StateClass = cat.S("webhooks.state.failing", cat.Moment(ep.FailingSince)), "failing"
	default:
		row.State, row.StateClass = disabledText(cat, ep.DisabledReason), "disabled"
	}
	return row
}

// disabledText says why an endpoint is disabled; a reason it does not
// know is shown as recorded.
func disabledText(cat *catalogue, reason string) string {
	if reason == memberDisabled {
		return cat.S("webhooks.state.disabled_member")
	}
	if reason == goneReason {
		return cat.S("webhooks.state.disabled_gone")
	}
	if since, ok := strings.CutPrefix(reason, failingReasonStart); ok {
		if t, err := time.Parse(time.RFC3339, since); err == nil {
			return cat.S("webhooks.state.disabled_failing", cat.Moment(t))
		}
	}
	if reason == "" {
		return cat.S("webhooks.state.disabled")
	}
	return cat.S("webhooks.state.disabled_other", reason)
}

type webhooksData struct {
	Endpoints []endpointRow
	Events    []eventChoice
	Format    choiceField
	URL       string // the URL sent, when the form is shown again
	Error     string
	Notice    string
	Max       int
	AtLimit   bool
}

// webhooksPage shows the member's endpoints and the add form.
func (h *handler) webhooksPage(w http.ResponseWriter, r *http.Request, s *certorder.Session, status int, data webhooksData, chosen []string, format string) {
	cat := h.cat(r)
	eps, err := h.store.Endpoints(r.Context(), s.Member)
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	for _, ep := range eps {
		data.Endpoints = append(data.Endpoints, endpointRowOf(cat, ep))
	}
	data.Events, data.Format = eventChoices(cat, chosen), formatField(cat, format)
	data.Max, data.AtLimit = MaxEndpoints, len(eps) >= MaxEndpoints
	h.render(w, r, status, "webhooks", signedIn(view{Title: cat.S("webhooks.title"), Section: "webhooks", Data: data}, s))
}

func (h *handler) webhooks(w http.ResponseWriter, r *http.Request, s *certorder.Session) {
	data := webhooksData{}
	if id, ok := positiveID(r.URL.Query().Get("deleted")); ok {
		data.Notice = h.cat(r).S("webhooks.notice.deleted", id)
	}
	h.webhooksPage(w, r, s, http.StatusOK, data, nil, "")
}

// formatKeys say each format: as a choice of the form, and by name.
var formatKeys = map[string]struct{ choice, name string }{
	certorder.FormatStandard: {"webhooks.format.standard", "webhooks.format_name.standard"},
	certorder.FormatSlack:    {"webhooks.format.slack", "webhooks.format_name.slack"},
}

// formatField is the format of an endpoint's messages.
func formatField(cat *catalogue, chosen string) choiceField {
	f := choiceField{Name: "format", Legend: cat.S("webhooks.add.format")}
	for _, v := range []string{certorder.FormatStandard, certorder.FormatSlack} {
		f.Choices = append(f.Choices, choice{Value: v, Name: cat.S(formatKeys[v].choice), Checked: v == certorder.EndpointFormat(chosen)})
	}
	return f
}

// positiveID reads an endpoint's or a delivery's ID.
func positiveID(s string) (int64, bool) {
	id, err := strconv.ParseInt(s, 10, 64)
	return id, err == nil && id > 0
}

// urlError says in the page's language why a URL was refused.
func (h *handler) urlError(cat *catalogue, raw string, err error) string {
	u, perr := url.Parse(raw)
	switch {
	case errors.Is(err, webhook.ErrBlocked) && perr == nil:
		return cat.S("webhooks.error.blocked", u.Hostname())
	case errors.Is(err, webhook.ErrInvalidURL) && perr == nil && u.Scheme == "http" && !h.cfg.PrivateWebhooks:
		return cat.S("webhooks.error.https")
	case errors.Is(err, webhook.ErrUnknownEventType):
		return cat.S("webhooks.error.events")
	}
	return cat.S("webhooks.error.url")
}

type webhookCreatedData struct {
	Endpoint endpointRow
	Secret   string
}

// addWebhook adds an endpoint and shows its signing secret, this once.
func (h *handler) addWebhook(w http.ResponseWriter, r *http.Request, s *certorder.Session) {
	cat := h.cat(r)
	if !h.formOK(w, r, s) {
		return
	}
	raw := strings.TrimSpace(r.PostFormValue("url"))
	chosen, format := r.PostForm["events"], certorder.EndpointFormat(r.PostFormValue("format"))
	raw = strings.ToValidUTF8(raw, "\uFFFD") // it is shown again in the form
	eps, err := h.store.Endpoints(r.Context(), s.Member)
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	if len(eps) >= MaxEndpoints {
		h.webhooksPage(w, r, s, http.StatusConflict, webhooksData{URL: raw, Error: cat.S("webhooks.error.limit", MaxEndpoints)}, chosen, format)
		return
	}
	ep, err := webhook.NewEndpoint(raw, chosen, h.cfg.PrivateWebhooks)
	if err != nil {
		h.webhooksPage(w, r, s, http.StatusBadRequest, webhooksData{URL: raw, Error: h.urlError(cat, raw, err)}, chosen, format)
		return
	}
	if format != certorder.FormatStandard && format != certorder.FormatSlack {
		h.errorPage(w, r, http.StatusBadRequest, "error.form_expired")
		return
	}
	ep.Format = format
	// The count above spares a refused URL's check; this one, in the
	// store's transaction, holds against parallel requests.
	ep, err = h.store.AddMemberEndpoint(r.Context(), s.MemberID, ep, MaxEndpoints)
	if errors.Is(err, certorder.ErrLimit) {
		h.webhooksPage(w, r, s, http.StatusConflict, webhooksData{URL: raw, Error: cat.S("webhooks.error.limit", MaxEndpoints)}, chosen, format)
		return
	}
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	h.audit(r, s.Member, "web WebhookAdd "+strconv.FormatInt(ep.ID, 10))
	h.render(w, r, http.StatusOK, "webhookcreated", signedIn(view{Title: cat.S("webhookcreated.title"), Section: "webhooks",
		Data: webhookCreatedData{Endpoint: endpointRowOf(cat, ep), Secret: ep.Secret}}, s))
}

type webhookData struct {
	Endpoint   endpointRow
	Deliveries []deliveryRow
	Shown      int
	Notice     string
	Error      string
}

// memberEndpoint reads the request's endpoint, scoped to the member; it
// answers "not found" (false) for a malformed ID, a missing endpoint or
// another member's, all alike.
func (h *handler) memberEndpoint(w http.ResponseWriter, r *http.Request, s *certorder.Session) (certorder.Endpoint, bool) {
	id, ok := positiveID(r.PathValue("id"))
	if !ok {
		h.notFound(w, r, s)
		return certorder.Endpoint{}, false
	}
	ep, err := h.store.MemberEndpoint(r.Context(), s.MemberID, id)
	if errors.Is(err, certorder.ErrNotFound) {
		h.notFound(w, r, s)
		return certorder.Endpoint{}, false
	}
	if err != nil {
		h.serverError(w, r, err)
		return certorder.Endpoint{}, false
	}
	return ep, true
}

// endpointPage shows one endpoint, its actions and its latest deliveries.
func (h *handler) endpointPage(w http.ResponseWriter, r *http.Request, s *certorder.Session, ep certorder.Endpoint, status int, data webhookData) {
	cat := h.cat(r)
	jobs, err := h.store.Jobs(r.Context(), queue.List{Kind: queue.KindWebhook, MemberID: s.MemberID, SubjectID: ep.ID,
		Limit: deliveriesShown})
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	data.Endpoint, data.Shown = endpointRowOf(cat, ep), deliveriesShown
	for _, j := range jobs {
		d, err := webhook.DeliveryOf(j)
		if err != nil {
			h.serverError(w, r, err)
			return
		}
		data.Deliveries = append(data.Deliveries, deliveryRowOf(cat, d, ep.Enabled))
	}
	h.render(w, r, status, "webhook", signedIn(view{Title: cat.S("webhook.title", ep.ID), Section: "webhooks", Data: data}, s))
}

func (h *handler) webhookEndpoint(w http.ResponseWriter, r *http.Request, s *certorder.Session) {
	ep, ok := h.memberEndpoint(w, r, s)
	if !ok {
		return
	}
	cat, q := h.cat(r), r.URL.Query()
	data := webhookData{}
	switch {
	case q.Get("tested") == "1":
		data.Notice = cat.S("webhook.notice.tested")
	case q.Get("disabled") == "1":
		data.Notice = cat.S("webhook.notice.disabled")
	case q.Get("enabled") == "1":
		data.Notice = cat.S("webhook.notice.enabled")
	case q.Has("redelivered"):
		if id, ok := positiveID(q.Get("redelivered")); ok {
			data.Notice = cat.S("webhook.notice.redelivered", id)
		}
	}
	h.endpointPage(w, r, s, ep, http.StatusOK, data)
}

// setWebhookEnabled disables or enables the endpoint.
func (h *handler) setWebhookEnabled(enabled bool) func(http.ResponseWriter, *http.Request, *certorder.Session) {
	return func(w http.ResponseWriter, r *http.Request, s *certorder.Session) {
		if !h.formOK(w, r, s) {
			return
		}
		id, ok := positiveID(r.PathValue("id"))
		if !ok {
			h.notFound(w, r, s)
			return
		}
		err := h.store.SetMemberEndpointEnabled(r.Context(), s.MemberID, id, enabled, memberDisabled)
		if errors.Is(err, certorder.ErrNotFound) {
			h.notFound(w, r, s) // another member's endpoint looks like a missing one
			return
		}
		if err != nil {
			h.serverError(w, r, err)
			return
		}
		action, notice := "web WebhookDisable ", "?disabled=1"
		if enabled {
			action, notice = "web WebhookEnable ", "?enabled=1"
		}
		h.audit(r, s.Member, action+strconv.FormatInt(id, 10))
		http.Redirect(w, r, "/webhooks/"+strconv.FormatInt(id, 10)+notice, http.StatusSeeOther)
	}
}

type webhookDeleteData struct {
	Endpoint endpointRow
}

// deleteWebhookPage asks for a confirmation before deleting an endpoint.
func (h *handler) deleteWebhookPage(w http.ResponseWriter, r *http.Request, s *certorder.Session) {
	ep, ok := h.memberEndpoint(w, r, s)
	if !ok {
		return
	}
	cat := h.cat(r)
	h.render(w, r, http.StatusOK, "webhookdelete", signedIn(view{Title: cat.S("webhookdelete.title", ep.ID), Section: "webhooks",
		Data: webhookDeleteData{Endpoint: endpointRowOf(cat, ep)}}, s))
}

// deleteOwn deletes, with del, the member's endpoint or address that the
// request's ID names, then goes to next; a malformed ID, a missing one and
// another member's are all "not found".
func (h *handler) deleteOwn(del func(ctx context.Context, memberID, id int64) error, action string,
	next func(id int64) string) func(http.ResponseWriter, *http.Request, *certorder.Session) {
	return func(w http.ResponseWriter, r *http.Request, s *certorder.Session) {
		if !h.formOK(w, r, s) {
			return
		}
		id, ok := positiveID(r.PathValue("id"))
		if !ok {
			h.notFound(w, r, s)
			return
		}
		err := del(r.Context(), s.MemberID, id)
		if errors.Is(err, certorder.ErrNotFound) {
			h.notFound(w, r, s)
			return
		}
		if err != nil {
			h.serverError(w, r, err)
			return
		}
		h.audit(r, s.Member, action+" "+strconv.FormatInt(id, 10))
		http.Redirect(w, r, next(id), http.StatusSeeOther)
	}
}
