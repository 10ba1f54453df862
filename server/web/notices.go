package web

import (
	"errors"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/notice"
)

// The member's e-mail notice addresses: list, add (used only once the link
// e-mailed to it is opened), change the language and events, remove. And
// the pages a message's links open without signing in: the confirmation,
// the unsubscribe (RFC 8058's one-click POST too), and the refusal of every
// later confirmation (a block: a confirmation's one-click), each checked by
// the link's signature (package notice). A GET only shows a
// button: a mail system that opens links to scan them changes nothing.

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
}

func (h *handler) addressRowOf(cat *catalogue, a certorder.NoticeAddress) addressRow {
	row := addressRow{ID: a.ID, Address: a.Address, Lang: cat.S("lang." + a.Lang), Events: a.EventTypes, LastSent: a.LastSent}
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
	if a.Failure != "" {
		row.Failure = cat.S("notices.failure", cat.Moment(a.FailedAt), a.Failure)
	}
	return row
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

// The links of a message.

type linkData struct {
	Text   string
	Action string // the form's action; "" for no form
	Token  string
	Button string
	Done   bool
}

// linkAddress reads the address a link's token names and checks the token
// with check; a token that names no address, or not this one, is "not
// valid" (404), and an expired one 410.
func (h *handler) linkAddress(w http.ResponseWriter, r *http.Request, token string,
	check func(certorder.NoticeAddress) error) (certorder.NoticeAddress, bool) {
	id, ok := notice.TokenAddress(token)
	var a certorder.NoticeAddress
	err := notice.ErrLink
	if ok {
		a, err = h.store.FindNoticeAddress(r.Context(), id)
		if err == nil {
			err = check(a)
		}
	}
	switch {
	case err == nil:
		return a, true
	case errors.Is(err, notice.ErrExpired):
		h.linkPage(w, r, http.StatusGone, "link.title.invalid", linkData{Text: h.cat(r).S("link.expired")})
	case errors.Is(err, notice.ErrLink), errors.Is(err, certorder.ErrNotFound):
		h.linkPage(w, r, http.StatusNotFound, "link.title.invalid", linkData{Text: h.cat(r).S("link.invalid")})
	default:
		h.serverError(w, r, err)
	}
	return a, false
}

func (h *handler) linkPage(w http.ResponseWriter, r *http.Request, status int, title string, data linkData) {
	h.render(w, r, status, "noticelink", view{Title: h.cat(r).S(title), Data: data})
}

// maxLinkForm bounds the body of a link's POST (a token, or RFC 8058's
// "List-Unsubscribe=One-Click").
const maxLinkForm = 4 << 10

// confirmPage shows the confirmation's button.
func (h *handler) confirmPage(w http.ResponseWriter, r *http.Request) {
	token := r.URL.Query().Get("t")
	now := h.cfg.Now()
	a, ok := h.linkAddress(w, r, token, func(a certorder.NoticeAddress) error { return notice.CheckConfirmToken(a, token, now) })
	if !ok {
		return
	}
	cat := h.cat(r)
	if !a.ConfirmedAt.IsZero() {
		h.linkPage(w, r, http.StatusOK, "link.title.confirm", linkData{Text: cat.S("link.used"), Done: true})
		return
	}
	h.linkPage(w, r, http.StatusOK, "link.title.confirm", linkData{Text: cat.S("link.confirm.text", a.Member, a.Address),
		Action: "/notices/confirm", Token: token, Button: cat.S("link.confirm.button")})
}

// confirm confirms the address, once.
func (h *handler) confirm(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxLinkForm)
	token := r.PostFormValue("t")
	now := h.cfg.Now()
	a, ok := h.linkAddress(w, r, token, func(a certorder.NoticeAddress) error { return notice.CheckConfirmToken(a, token, now) })
	if !ok {
		return
	}
	cat := h.cat(r)
	err := h.store.ConfirmNoticeAddress(r.Context(), a.ID, now)
	switch {
	case errors.Is(err, certorder.ErrConflict):
		h.linkPage(w, r, http.StatusConflict, "link.title.confirm", linkData{Text: cat.S("link.used"), Done: true})
		return
	case err != nil:
		h.serverError(w, r, err)
		return
	}
	h.audit(r, a.Member, "web NoticeConfirm "+strconv.FormatInt(a.ID, 10))
	h.linkPage(w, r, http.StatusOK, "link.title.confirm", linkData{Text: cat.S("link.confirmed", a.Address, a.Member), Done: true})
}

// unsubscribePage shows the unsubscribe button.
func (h *handler) unsubscribePage(w http.ResponseWriter, r *http.Request) {
	token := r.URL.Query().Get("t")
	a, ok := h.linkAddress(w, r, token, func(a certorder.NoticeAddress) error { return notice.CheckUnsubscribeToken(a, token) })
	if !ok {
		return
	}
	cat := h.cat(r)
	if !a.UnsubscribedAt.IsZero() {
		h.linkPage(w, r, http.StatusOK, "link.title.unsubscribe", linkData{Text: cat.S("link.unsubscribed", a.Member, a.Address), Done: true})
		return
	}
	h.linkPage(w, r, http.StatusOK, "link.title.unsubscribe", linkData{Text: cat.S("link.unsubscribe.text", a.Member, a.Address),
		Action: "/notices/unsubscribe", Token: token, Button: cat.S("link.unsubscribe.button")})
}

// unsubscribe stops the messages to the address: the page's button, or a
// mail client's one-click POST (RFC 8058) to the List-Unsubscribe link,
// whose token is in the query and body is "List-Unsubscribe=One-Click".
func (h *handler) unsubscribe(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxLinkForm)
	token := r.FormValue("t")
	a, ok := h.linkAddress(w, r, token, func(a certorder.NoticeAddress) error { return notice.CheckUnsubscribeToken(a, token) })
	if !ok {
		return
	}
	if err := h.store.UnsubscribeNoticeAddress(r.Context(), a.ID, h.cfg.Now()); err != nil {
		h.serverError(w, r, err)
		return
	}
	h.audit(r, a.Member, "web NoticeUnsubscribe "+strconv.FormatInt(a.ID, 10))
	h.linkPage(w, r, http.StatusOK, "link.title.unsubscribe", linkData{Text: h.cat(r).S("link.unsubscribed", a.Member, a.Address), Done: true})
}

// blockConfirmation reads the confirmation a block link's token names,
// checked: a token that names none, or not this one, is "not valid" (404).
func (h *handler) blockConfirmation(w http.ResponseWriter, r *http.Request, token string) (certorder.NoticeConfirmation, bool) {
	id, ok := notice.TokenAddress(token)
	var c certorder.NoticeConfirmation
	err := notice.ErrLink
	if ok {
		var cs []certorder.NoticeConfirmation
		if cs, err = h.store.NoticeConfirmations(r.Context(), id); err == nil {
			c, err = notice.CheckBlockToken(cs, token)
		}
	}
	switch {
	case err == nil:
		return c, true
	case errors.Is(err, notice.ErrLink):
		h.linkPage(w, r, http.StatusNotFound, "link.title.invalid", linkData{Text: h.cat(r).S("link.invalid")})
	default:
		h.serverError(w, r, err)
	}
	return c, false
}

// blockPage shows the button that refuses every later confirmation.
func (h *handler) blockPage(w http.ResponseWriter, r *http.Request) {
	token := r.URL.Query().Get("t")
	c, ok := h.blockConfirmation(w, r, token)
	if !ok {
		return
	}
	cat := h.cat(r)
	h.linkPage(w, r, http.StatusOK, "link.title.block", linkData{Text: cat.S("link.block.text", c.Member, c.Address),
		Action: "/notices/block", Token: token, Button: cat.S("link.block.button")})
}

// block refuses every later confirmation to the recipient, and every
// address of it a member or the operator would add: the page's button, or
// a mail client's one-click POST (RFC 8058) to the confirmation's
// List-Unsubscribe link.
func (h *handler) block(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxLinkForm)
	token := r.FormValue("t")
	c, ok := h.blockConfirmation(w, r, token)
	if !ok {
		return
	}
	if err := h.store.BlockNoticeRecipient(r.Context(), certorder.NoticeRecipient(c.Address), h.cfg.Now()); err != nil {
		h.serverError(w, r, err)
		return
	}
	h.audit(r, c.Member, "web NoticeBlock "+strconv.FormatInt(c.AddressID, 10))
	h.linkPage(w, r, http.StatusOK, "link.title.block", linkData{Text: h.cat(r).S("link.blocked", c.Address), Done: true})
}
