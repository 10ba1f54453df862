package web

import (
	"errors"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/notice"
	"github.com/certorder/certorder/webhook"
)

// The member's e-mail notice addresses: list, add (used only once the link
// e-mailed to it is opened), change the language and events, send a test
// message, remove. The pages of a message's links are noticelinks.go's.

// addressRow is an address as the pages show it; never its secret.
type addressRow struct {
	ID         int64
	Address    string
	Lang       string
	Events     []string // empty: all events
	State      string
	StateClass string // ok, pending, disabled
	LastSent   time.Time
	Failure    string // the last permanent failure, in words
	Testable   bool   // it may get a test message now
}

func (h *handler) addressRowOf(cat *catalogue, a certorder.NoticeAddress) addressRow {
	row := addressRow{ID: a.ID, Address: a.Address, Lang: cat.S("lang." + a.Lang), Events: a.EventTypes, LastSent: a.LastSent,
		Testable: h.cfg.TestNotice != nil && a.Active()}
	switch {
	case !a.UnsubscribedAt.IsZero():
		row.State, row.StateClass = cat.S("notices.state.unsubscribed", cat.Moment(a.UnsubscribedAt)), "disabled"
	case a.ConfirmedAt.IsZero() && h.cfg.Now().After(a.CreatedAt.Add(notice.ConfirmFor)):
		row.State, row.StateClass = cat.S("notices.state.expired"), "disabled"
	case a.ConfirmedAt.IsZero():
		row.State, row.StateClass = cat.S("notices.state.awaiting"), "failing"
	default:
		row.State, row.StateClass = cat.S("notices.state.active"), "ok"
	}
	row.Failure = failureWords(cat, a)
	return row
}

// failureWords is an address's last permanent failure as the member is
// told it: its kind, never the relay's address or words (the operator's,
// in admin notice list). Whether the mail server of an address nobody has
// confirmed refused it is not said at all: the page would tell whoever
// typed a stranger's address whether that mailbox exists.
func failureWords(cat *catalogue, a certorder.NoticeAddress) string {
	kind := a.FailureKind
	switch {
	case a.Failure == "":
		return ""
	case kind != mailKindService && a.ConfirmedAt.IsZero():
		return ""
	case kind != mailKindRecipient && kind != mailKindMessage && kind != mailKindService:
		kind = "unknown" // recorded before the kinds were
	}
	return cat.S(failureKeys[kind], cat.Moment(a.FailedAt))
}

// The kinds of failure the mailer records (mailer.Kind...).
const (
	mailKindRecipient = "recipient"
	mailKindMessage   = "message"
	mailKindService   = "service"
)

// What the page says of a recorded failure of each kind, and of a test
// message's.
var (
	failureKeys = map[string]string{mailKindRecipient: "notices.failure.recipient", mailKindMessage: "notices.failure.message",
		mailKindService: "notices.failure.service", "unknown": "notices.failure.unknown"}
	testedKeys = map[string]string{mailKindRecipient: "notices.error.tested.recipient", mailKindMessage: "notices.error.tested.message",
		mailKindService: "notices.error.tested.service"}
)

// testNoticeTimeout bounds the page's test message, the relay's exchange
// included: within the server's write timeout.
const testNoticeTimeout = 12 * time.Second

// testNotice sends a test message to the address now and says what came
// of it in the member's words: delivered, or the kind of failure. Test
// messages count with the webhooks' test events and redeliveries.
func (h *handler) testNotice(w http.ResponseWriter, r *http.Request, s *certorder.Session) {
	if !h.formOK(w, r, s) {
		return
	}
	a, ok := h.memberAddress(w, r, s)
	if !ok {
		return
	}
	cat := h.cat(r)
	if h.cfg.TestNotice == nil {
		h.noticesPage(w, r, s, http.StatusConflict, noticesData{Error: cat.S("notices.error.off")}, "", nil)
		return
	}
	if !a.Active() {
		h.noticesPage(w, r, s, http.StatusConflict, noticesData{Error: cat.S("notices.error.test_inactive", a.Address)}, "", nil)
		return
	}
	allowed, wait, _ := h.tests.Allow(s.MemberID, h.cfg.Now())
	if !allowed {
		w.Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds())+1))
		h.noticesPage(w, r, s, http.StatusTooManyRequests,
			noticesData{Error: cat.S("notices.error.send_limit", webhook.TestBurst, roundWait(cat, wait))}, "", nil)
		return
	}
	err := h.cfg.TestNotice(r.Context(), a)
	h.audit(r, s.Member, "web NoticeTest "+strconv.FormatInt(a.ID, 10))
	if err == nil {
		h.noticesPage(w, r, s, http.StatusOK, noticesData{Notice: cat.S("notices.notice.tested", a.Address)}, "", nil)
		return
	}
	var failed interface{ Kind() string }
	key := testedKeys[mailKindService]
	if errors.As(err, &failed) && testedKeys[failed.Kind()] != "" {
		key = testedKeys[failed.Kind()]
	}
	h.noticesPage(w, r, s, http.StatusBadGateway, noticesData{Error: cat.S(key, a.Address)}, "", nil)
}

// choiceField is a form's radio buttons (the "choices" template).
type choiceField struct {
	Name, Legend string
	Choices      []choice
}

// choice is one of them; Lang, when set, is the language its name is in.
type choice struct {
	Value, Name, Lang string
	Checked           bool
}

// languageField is the language of an address's messages.
func languageField(cat *catalogue, chosen string) choiceField {
	f := choiceField{Name: "lang", Legend: cat.S("notices.add.language")}
	for _, l := range notice.Languages {
		f.Choices = append(f.Choices, choice{Value: l, Name: cat.S("lang." + l), Lang: l, Checked: l == chosen})
	}
	return f
}

type noticesData struct {
	On        bool // the operator set up e-mail: addresses may be added
	Testing   bool // addresses may get a test message
	Addresses []addressRow
	Events    []eventChoice
	Language  choiceField
	Address   string // the address sent, when the form is shown again
	Error     string
	Notice    string
	Max       int
	AtLimit   bool
}

// noticesPage shows the member's addresses and the add form.
func (h *handler) noticesPage(w http.ResponseWriter, r *http.Request, s *certorder.Session, status int, data noticesData, lang string, chosen []string) {
	cat := h.cat(r)
	as, err := h.store.NoticeAddresses(r.Context(), s.MemberID)
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	for _, a := range as {
		data.Addresses = append(data.Addresses, h.addressRowOf(cat, a))
	}
	if lang == "" {
		lang = cat.lang
	}
	data.On, data.Language, data.Events = h.cfg.Notices, languageField(cat, lang), eventChoices(cat, chosen)
	data.Testing = h.cfg.TestNotice != nil && len(as) > 0
	data.Max, data.AtLimit = certorder.MaxNoticeAddresses, len(as) >= certorder.MaxNoticeAddresses
	h.render(w, r, status, "notices", signedIn(view{Title: cat.S("notices.title"), Section: "notices", Data: data}, s))
}

// eventChoices are the event types of a form, the chosen ones ticked.
func eventChoices(cat *catalogue, chosen []string) []eventChoice {
	var es []eventChoice
	for _, t := range certorder.OrderEventTypes {
		es = append(es, eventChoice{Name: t, What: cat.S(eventKeys[t]), Checked: slices.Contains(chosen, t)})
	}
	return es
}

func (h *handler) notices(w http.ResponseWriter, r *http.Request, s *certorder.Session) {
	cat, q := h.cat(r), r.URL.Query()
	data := noticesData{}
	switch {
	case q.Has("added"):
		if id, ok := positiveID(q.Get("added")); ok {
			if a, err := h.store.MemberNoticeAddress(r.Context(), s.MemberID, id); err == nil {
				data.Notice = cat.S("notices.notice.added", a.Address)
			}
		}
	case q.Has("removed"):
		data.Notice = cat.S("notices.notice.removed")
	}
	h.noticesPage(w, r, s, http.StatusOK, data, "", nil)
}

// addNotice adds an address and queues its confirmation.
func (h *handler) addNotice(w http.ResponseWriter, r *http.Request, s *certorder.Session) {
	cat := h.cat(r)
	if !h.formOK(w, r, s) {
		return
	}
	raw, lang, chosen := r.PostFormValue("address"), r.PostFormValue("lang"), r.PostForm["events"]
	again := func(status int, key string, args ...any) {
		h.noticesPage(w, r, s, status, noticesData{Address: certorder.Cut(raw, 254), Error: cat.S(key, args...)}, lang, chosen)
	}
	if !h.cfg.Notices {
		again(http.StatusConflict, "notices.error.off")
		return
	}
	a, err := notice.NewAddress(raw, lang, chosen)
	if err != nil {
		again(http.StatusBadRequest, "notices.error.address")
		return
	}
	a.CreatedAt = h.cfg.Now()
	a, err = h.store.AddNoticeAddress(r.Context(), s.MemberID, a, certorder.MaxNoticeAddresses)
	var budget *certorder.BudgetError
	switch {
	case errors.As(err, &budget): // before ErrLimit, which it wraps
		h.audit(r, s.Member, "web NoticeRefused "+budget.Budget)
		w.Header().Set("Retry-After", strconv.Itoa(int(budget.Until.Sub(h.cfg.Now()).Seconds())+1))
		again(http.StatusTooManyRequests, "notices.error.budget."+budget.Budget, budget.Limit, cat.Moment(budget.Until))
		return
	case errors.Is(err, certorder.ErrBlocked):
		h.audit(r, s.Member, "web NoticeRefused blocked")
		again(http.StatusForbidden, "notices.error.blocked")
		return
	case errors.Is(err, certorder.ErrLimit):
		again(http.StatusConflict, "notices.error.limit", certorder.MaxNoticeAddresses)
		return
	case errors.Is(err, certorder.ErrConflict):
		again(http.StatusConflict, "notices.error.duplicate")
		return
	case err != nil:
		h.serverError(w, r, err)
		return
	}
	h.audit(r, s.Member, "web NoticeAdd "+strconv.FormatInt(a.ID, 10))
	http.Redirect(w, r, "/notices?added="+strconv.FormatInt(a.ID, 10), http.StatusSeeOther)
}

type noticeData struct {
	Address  addressRow
	Events   []eventChoice
	Language choiceField
	Notice   string
}

// memberAddress reads the request's address, scoped to the member: "not
// found" (false) for a malformed ID, a missing address or another member's.
func (h *handler) memberAddress(w http.ResponseWriter, r *http.Request, s *certorder.Session) (certorder.NoticeAddress, bool) {
	id, ok := positiveID(r.PathValue("id"))
	if !ok {
		h.notFound(w, r, s)
		return certorder.NoticeAddress{}, false
	}
	a, err := h.store.MemberNoticeAddress(r.Context(), s.MemberID, id)
	if errors.Is(err, certorder.ErrNotFound) {
		h.notFound(w, r, s)
		return a, false
	}
	if err != nil {
		h.serverError(w, r, err)
		return a, false
	}
	return a, true
}

// noticeAddress shows one address with its form.
func (h *handler) noticeAddress(w http.ResponseWriter, r *http.Request, s *certorder.Session) {
	a, ok := h.memberAddress(w, r, s)
	if !ok {
		return
	}
	cat := h.cat(r)
	data := noticeData{Address: h.addressRowOf(cat, a), Events: eventChoices(cat, a.EventTypes), Language: languageField(cat, a.Lang)}
	if r.URL.Query().Has("saved") {
		data.Notice = cat.S("notice.saved")
	}
	h.render(w, r, http.StatusOK, "notice", signedIn(view{Title: cat.S("notice.title", a.Address), Section: "notices", Data: data}, s))
}

// saveNotice changes an address's language and events.
func (h *handler) saveNotice(w http.ResponseWriter, r *http.Request, s *certorder.Session) {
	if !h.formOK(w, r, s) {
		return
	}
	a, ok := h.memberAddress(w, r, s)
	if !ok {
		return
	}
	// NewAddress checks the language and the events as it does for a new one.
	checked, err := notice.NewAddress(a.Address, r.PostFormValue("lang"), r.PostForm["events"])
	if err != nil {
		h.errorPage(w, r, http.StatusBadRequest, "error.form_expired")
		return
	}
	if err := h.store.SetMemberNoticeAddress(r.Context(), s.MemberID, a.ID, checked.Lang, checked.EventTypes); err != nil {
		h.serverError(w, r, err)
		return
	}
	h.audit(r, s.Member, "web NoticeChange "+strconv.FormatInt(a.ID, 10))
	http.Redirect(w, r, "/notices/"+strconv.FormatInt(a.ID, 10)+"?saved=1", http.StatusSeeOther)
}
