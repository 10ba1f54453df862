package web

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/notice"
)

// The pages a message's links open without signing in: the confirmation,
// the unsubscribe (RFC 8058's one-click POST too), and the refusal of every
// later confirmation (a block: a confirmation's one-click), each checked by
// the link's signature (package notice). A GET only shows a button: a mail
// system that opens links to scan them changes nothing.

// The links of a message.

type linkData struct {
	Text   string
	Action string // the form's action; "" for no form
	Token  string
	Button string
	Done   bool
}

// decoy is an address that exists nowhere, with a secret as long as a real
// one's: what linkAddress checks a token of a missing address against.
var decoy, _ = notice.NewAddress("decoy@certorder.invalid", "", nil)

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
		switch {
		case err == nil:
			err = check(a)
		case errors.Is(err, certorder.ErrNotFound):
			// The same check against a decoy, so that refusing a link of a
			// missing address costs what refusing a forged one costs.
			check(certorder.NoticeAddress{ID: id, Address: decoy.Address, Secret: decoy.Secret, CreatedAt: h.cfg.Now()})
		}
	}
	switch {
	case err == nil:
		return a, true
	case errors.Is(err, notice.ErrExpired):
		r = h.inAddressLanguage(r, a.Lang) // a real address, its link out of date
		h.linkPage(w, r, http.StatusGone, "link.title.invalid", linkData{Text: h.cat(r).S("link.expired")})
	case errors.Is(err, notice.ErrLink), errors.Is(err, certorder.ErrNotFound):
		h.linkPage(w, r, http.StatusNotFound, "link.title.invalid", linkData{Text: h.cat(r).S("link.invalid")})
	default:
		h.serverError(w, r, err)
	}
	return a, false
}

// inAddressLanguage is r with the address's language (the language of the
// message the link came in) for the page it opens: a Japanese address's
// unsubscribe page is in Japanese whatever the browser's Accept-Language
// says. Only the language switch's cookie, a choice the reader made on
// this site, goes before it; a language the site has not reads as r's.
func (h *handler) inAddressLanguage(r *http.Request, lang string) *http.Request {
	cat, ok := h.cats[lang]
	if _, err := r.Cookie(langCookie); err == nil || !ok {
		return r
	}
	return r.WithContext(context.WithValue(r.Context(), langKey{}, cat))
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
	r = h.inAddressLanguage(r, a.Lang)
	cat := h.cat(r)
	switch {
	case a.MemberDisabled:
		h.linkPage(w, r, http.StatusForbidden, "link.title.confirm", linkData{Text: cat.S("link.disabled", a.Member)})
		return
	case !a.ConfirmedAt.IsZero():
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
	r = h.inAddressLanguage(r, a.Lang)
	cat := h.cat(r)
	if a.MemberDisabled {
		// The member was disabled after the link went out: no address of
		// it is confirmed until it is enabled again.
		h.linkPage(w, r, http.StatusForbidden, "link.title.confirm", linkData{Text: cat.S("link.disabled", a.Member)})
		return
	}
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
	r = h.inAddressLanguage(r, a.Lang)
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
	r = h.inAddressLanguage(r, a.Lang)
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

// confirmationLanguage is r in the language of the address a confirmation
// went to (inAddressLanguage); an address deleted since reads as r's.
func (h *handler) confirmationLanguage(r *http.Request, c certorder.NoticeConfirmation) *http.Request {
	a, err := h.store.FindNoticeAddress(r.Context(), c.AddressID)
	if err != nil || a.MemberID != c.MemberID {
		return r
	}
	return h.inAddressLanguage(r, a.Lang)
}

// blockPage shows the button that refuses every later confirmation.
func (h *handler) blockPage(w http.ResponseWriter, r *http.Request) {
	token := r.URL.Query().Get("t")
	c, ok := h.blockConfirmation(w, r, token)
	if !ok {
		return
	}
	r = h.confirmationLanguage(r, c)
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
	r = h.confirmationLanguage(r, c)
	if err := h.store.BlockNoticeRecipient(r.Context(), certorder.NoticeRecipient(c.Address), h.cfg.Now()); err != nil {
		h.serverError(w, r, err)
		return
	}
	h.audit(r, c.Member, "web NoticeBlock "+strconv.FormatInt(c.AddressID, 10))
	h.linkPage(w, r, http.StatusOK, "link.title.block", linkData{Text: h.cat(r).S("link.blocked", c.Address), Done: true})
}
