package web

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/certorder/certorder"
)

// maxForm bounds a form's body.
const maxForm = 16 << 10

type signInData struct {
	Name, Error, Note string
}

// signInPage shows the form, with a fresh double-submit CSRF token.
func (h *handler) signInPage(w http.ResponseWriter, r *http.Request) {
	cat := h.cat(r)
	data := signInData{}
	switch {
	case r.URL.Query().Get("expired") != "":
		data.Note = cat.S("signin.note.expired")
	case r.URL.Query().Get("revoked") != "":
		data.Note = cat.S("signin.note.revoked")
	}
	h.signInForm(w, r, http.StatusOK, data)
}

// signInForm renders the form with a new token, in a cookie and in the
// form: a POST must carry both (double submit). Under TLS the cookie is
// __Host-, so nobody but this host can set it (see docs/OPERATIONS.md).
func (h *handler) signInForm(w http.ResponseWriter, r *http.Request, status int, data signInData) {
	token, err := newToken()
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	http.SetCookie(w, h.cookie(r, csrfCookie, token, 3600))
	h.render(w, r, status, "signin", view{Title: h.cat(r).S("signin.title"), CSRF: token, Data: data})
}

// echoName is what a refused sign-in puts back in the Member ID field: the
// name, if it could be one and is not shaped like a key. A key pasted into
// the wrong field must not come back in the page (to the screen, the
// browser's form history, a screenshot); a member re-types it.
func echoName(name string) string {
	if certorder.ValidMemberName(name) != nil || certorder.RedactKeys(name) != name {
		return ""
	}
	return name
}

// sameToken compares two tokens in constant time; empty never matches.
func sameToken(a, b string) bool {
	return a != "" && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

func (h *handler) signIn(w http.ResponseWriter, r *http.Request) {
	cat := h.cat(r)
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if !sameToken(h.readCookie(r, csrfCookie), r.PostFormValue("csrf")) {
		h.signInForm(w, r, http.StatusForbidden, signInData{Error: cat.S("signin.error.form_expired")})
		return
	}
	name := r.PostFormValue("name")
	cred, err := h.cfg.SignIn(r, name, r.PostFormValue("key"))
	var throttled *ThrottledError
	switch {
	case errors.As(err, &throttled):
		w.Header().Set("Retry-After", strconv.Itoa(int(throttled.Wait.Seconds())+1))
		h.signInForm(w, r, http.StatusTooManyRequests, signInData{Name: echoName(name),
			Error: cat.S("signin.error.throttled", roundWait(cat, throttled.Wait))})
		return
	case errors.Is(err, ErrRefused):
		h.signInForm(w, r, http.StatusUnauthorized, signInData{Name: echoName(name), Error: cat.S("signin.error.refused")})
		return
	case err != nil:
		h.serverError(w, r, err)
		return
	}
	token, err := newToken()
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	csrf, err := newToken()
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	now := h.cfg.Now()
	s := certorder.Session{TokenHash: certorder.HashKey(token), MemberID: cred.MemberID, KeyID: cred.KeyID,
		CSRF: csrf, Created: now, Expires: now.Add(h.cfg.SessionTTL)}
	if err := h.store.AddSession(r.Context(), s); err != nil {
		h.serverError(w, r, err)
		return
	}
	if err := h.store.PruneSessions(r.Context(), now); err != nil {
		h.cfg.Logger.Warn("web: pruning sessions", "err", err)
	}
	h.audit(r, cred.Member, "web SignIn "+cred.KeyID)
	http.SetCookie(w, h.cookie(r, sessionCookie, token, int(h.cfg.SessionTTL.Seconds())))
	http.SetCookie(w, h.cookie(r, csrfCookie, "", -1))
	http.Redirect(w, r, "/orders", http.StatusSeeOther)
}

func roundWait(cat *catalogue, d time.Duration) string {
	if d < time.Minute {
		return cat.S("wait.seconds", int(d.Seconds())+1)
	}
	return cat.S("wait.minutes", int(d.Minutes())+1)
}

// formOK checks a signed-in form's token, or answers 403.
func (h *handler) formOK(w http.ResponseWriter, r *http.Request, s *certorder.Session) bool {
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if !sameToken(s.CSRF, r.PostFormValue("csrf")) {
		h.errorPage(w, r, http.StatusForbidden, "error.form_expired")
		return false
	}
	return true
}

func (h *handler) signOut(w http.ResponseWriter, r *http.Request, s *certorder.Session) {
	if !h.formOK(w, r, s) {
		return
	}
	if err := h.store.DeleteSession(r.Context(), s.TokenHash); err != nil {
		h.serverError(w, r, err)
		return
	}
	h.audit(r, s.Member, "web SignOut")
	http.SetCookie(w, h.cookie(r, sessionCookie, "", -1))
	http.Redirect(w, r, "/signin", http.StatusSeeOther)
}

// newToken returns 256 random bits, URL-safe: session tokens, CSRF tokens.
func newToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}
