package web

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/storekit"
)

// Bounds on a member's self-service keys.
const (
	MaxActiveKeys = 20 // active keys a member may hold; more is refused
	maxLabel      = 64 // characters of a key's label
)

// keyRow is one key of the keys page.
type keyRow struct {
	ID, Label string
	Created   time.Time
	LastUsed  time.Time // zero: never used, as far as the audit trail knows
	Revoked   time.Time // zero while active
	ThisKey   bool      // the key this session signed in with
}

type keysData struct {
	Keys         []keyRow
	SelfService  bool   // the member may create and revoke keys here
	AuditOff     bool   // no audit trail: "last used" is not recorded
	Label        string // the label sent, when the form is shown again
	Error        string
	Notice       string
	Active       int
	MaxActive    int
	AtLimit      bool
	RevokedKeyID string
}

// selfService says whether the session's member may change its keys here.
func (h *handler) selfService(s *certorder.Session) bool {
	return !h.cfg.SelfServiceKeysOff && !s.SelfServiceKeysOff
}

// memberKeys lists the member's keys with their last use.
func (h *handler) memberKeys(r *http.Request, s *certorder.Session) ([]keyRow, int, error) {
	keys, err := h.store.Keys(r.Context(), s.Member)
	if err != nil {
		return nil, 0, err
	}
	ids := make([]string, len(keys))
	for i, k := range keys {
		ids[i] = k.ID
	}
	last, err := h.store.KeysLastUsed(r.Context(), ids)
	if err != nil {
		return nil, 0, err
	}
	rows, active := make([]keyRow, 0, len(keys)), 0
	// Newest first: the key just made is at the top.
	for i := len(keys) - 1; i >= 0; i-- {
		k := keys[i]
		rows = append(rows, keyRow{ID: k.ID, Label: k.Label, Created: k.CreatedAt, LastUsed: last[k.ID],
			Revoked: k.RevokedAt, ThisKey: k.ID == s.KeyID})
		if !k.Revoked() {
			active++
		}
	}
	return rows, active, nil
}

func (h *handler) keysPage(w http.ResponseWriter, r *http.Request, s *certorder.Session, status int, data keysData) {
	rows, active, err := h.memberKeys(r, s)
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	data.Keys, data.Active, data.MaxActive, data.AtLimit = rows, active, MaxActiveKeys, active >= MaxActiveKeys
	data.SelfService, data.AuditOff = h.selfService(s), h.cfg.Audit == nil
	h.render(w, r, status, "keys", signedIn(view{Title: h.cat(r).S("keys.title"), Section: "keys", Data: data}, s))
}

func (h *handler) keys(w http.ResponseWriter, r *http.Request, s *certorder.Session) {
	data := keysData{}
	if id := r.URL.Query().Get("revoked"); id != "" {
		if _, ok := certorder.KeyID(certorder.KeyPrefix + id + "_x"); ok {
			data.Notice = h.cat(r).S("keys.notice.revoked", id)
		}
	}
	h.keysPage(w, r, s, http.StatusOK, data)
}

// cleanLabel trims a label and checks it: printable text, at most maxLabel characters.
func cleanLabel(label string) (string, bool) {
	label = strings.TrimSpace(label)
	if !utf8.ValidString(label) || utf8.RuneCountInString(label) > maxLabel {
		return label, false
	}
	for _, c := range label {
		if !unicode.IsPrint(c) && c != ' ' {
			return label, false
		}
	}
	return label, label != ""
}

type keyCreatedData struct {
	ID, Label, Text, Member string
}

// createKey makes a key with the label and shows it, this once.
func (h *handler) createKey(w http.ResponseWriter, r *http.Request, s *certorder.Session) {
	cat := h.cat(r)
	if !h.formOK(w, r, s) {
		return
	}
	if !h.selfService(s) {
		h.errorPage(w, r, http.StatusForbidden, "keys.error.off")
		return
	}
	label, ok := cleanLabel(r.PostFormValue("label"))
	if !ok {
		h.keysPage(w, r, s, http.StatusBadRequest, keysData{Label: label, Error: cat.S("keys.error.label", maxLabel)})
		return
	}
	_, active, err := h.memberKeys(r, s)
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	if active >= MaxActiveKeys {
		h.keysPage(w, r, s, http.StatusConflict, keysData{Label: label, Error: cat.S("keys.error.limit", MaxActiveKeys)})
		return
	}
	text, key, err := certorder.NewKey(label)
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	// The count above shapes the page; this one, in the store's
	// transaction, holds against parallel requests.
	if err := h.store.AddMemberKey(r.Context(), s.MemberID, key, MaxActiveKeys); errors.Is(err, certorder.ErrLimit) {
		h.keysPage(w, r, s, http.StatusConflict, keysData{Label: label, Error: cat.S("keys.error.limit", MaxActiveKeys)})
		return
	} else if err != nil {
		h.serverError(w, r, err)
		return
	}
	h.audit(r, s.Member, "web KeyCreate "+key.ID)
	h.render(w, r, http.StatusOK, "keycreated", signedIn(view{Title: cat.S("keycreated.title"), Section: "keys",
		Data: keyCreatedData{ID: key.ID, Label: label, Text: text, Member: s.Member}}, s))
}

type keyRevokeData struct {
	Key         keyRow
	SelfService bool
}

// memberKey finds one of the member's keys by ID; false if the member has none such.
func (h *handler) memberKey(r *http.Request, s *certorder.Session, id string) (keyRow, bool, error) {
	rows, _, err := h.memberKeys(r, s)
	if err != nil {
		return keyRow{}, false, err
	}
	for _, k := range rows {
		if k.ID == id {
			return k, true, nil
		}
	}
	return keyRow{}, false, nil
}

// revokeKeyPage asks for a confirmation before revoking a key.
func (h *handler) revokeKeyPage(w http.ResponseWriter, r *http.Request, s *certorder.Session) {
	k, ok, err := h.memberKey(r, s, r.PathValue("id"))
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	if !ok {
		h.notFound(w, r, s)
		return
	}
	h.render(w, r, http.StatusOK, "keyrevoke", signedIn(view{Title: h.cat(r).S("keyrevoke.title", k.ID), Section: "keys",
		Data: keyRevokeData{Key: k, SelfService: h.selfService(s)}}, s))
}

// revokeKey revokes one of the member's keys. Revoking the key the
// session signed in with ends the session.
func (h *handler) revokeKey(w http.ResponseWriter, r *http.Request, s *certorder.Session) {
	if !h.formOK(w, r, s) {
		return
	}
	if !h.selfService(s) {
		h.errorPage(w, r, http.StatusForbidden, "keys.error.off")
		return
	}
	id := r.PathValue("id")
	err := h.store.RevokeMemberKey(r.Context(), s.MemberID, id)
	if errors.Is(err, certorder.ErrNotFound) {
		h.notFound(w, r, s) // another member's key looks like a missing one
		return
	}
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	h.audit(r, s.Member, "web KeyRevoke "+id)
	h.awaitInstances(r, id)
	if id == s.KeyID {
		if err := h.store.DeleteSession(r.Context(), s.TokenHash); err != nil {
			h.cfg.Logger.Warn("web: ending the session of a revoked key", "err", err) // FindSession refuses it anyway
		}
		http.SetCookie(w, h.cookie(r, sessionCookie, "", -1))
		http.Redirect(w, r, "/signin?revoked=1", http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, "/keys?revoked="+id, http.StatusSeeOther)
}

// awaitInstances returns once every serving instance has applied the
// revocation (PostgreSQL instances cache, and learn of changes by
// notification), or after 15 s, logging those that did not confirm.
func (h *handler) awaitInstances(r *http.Request, keyID string) {
	w, ok := h.store.(storekit.InstanceAwaiter)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 15*time.Second)
	defer cancel()
	unconfirmed, err := w.AwaitInstances(ctx)
	if err != nil || len(unconfirmed) > 0 {
		h.cfg.Logger.Warn("web: a key revocation not confirmed by every serving instance",
			"key", keyID, "unconfirmed", unconfirmed, "err", err)
	}
}
