package notice

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/mail"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/certorder/certorder"
)

// ConfirmFor is how long a confirmation link works after the address was
// added.
const ConfirmFor = 24 * time.Hour

// maxAddress is the longest address a mail server must take (RFC 5321's
// path limit, less its angle brackets).
const maxAddress = 254

// Errors of NewAddress and the links; every one wraps certorder.ErrInvalid.
var (
	ErrAddress   = fmt.Errorf("%w: not an e-mail address", certorder.ErrInvalid)
	ErrLanguage  = fmt.Errorf("%w: unknown language", certorder.ErrInvalid)
	ErrEventType = fmt.Errorf("%w: unknown event type", certorder.ErrInvalid)
	ErrLink      = fmt.Errorf("%w: the link is not valid", certorder.ErrInvalid)
	ErrExpired   = fmt.Errorf("%w: the link has expired", certorder.ErrInvalid)
)

// NewAddress checks a new address (a bare addr-spec, name@domain, kept in
// lower case: mail systems take any case, and one address is one), its language (en, ja; "" is en) and event
// types (each an order event; blanks skipped, repeats kept once; none
// means all), and gives it a fresh secret: the address as the store's
// AddNoticeAddress takes it. The operator's command and the member's web
// page both add addresses through it.
func NewAddress(address, lang string, types []string) (certorder.NoticeAddress, error) {
	address = strings.TrimSpace(address)
	p, err := mail.ParseAddress(address)
	at := strings.LastIndexByte(address, '@')
	if err != nil || p.Name != "" || p.Address != address || len(address) > maxAddress || at < 1 ||
		!strings.Contains(address[at:], ".") || strings.ContainsAny(address, " \t\r\n<>\"") {
		return certorder.NoticeAddress{}, fmt.Errorf("%w: %q (want name@example.com)", ErrAddress, certorder.Cut(address, 100))
	}
	address = strings.ToLower(address)
	if lang == "" {
		lang = Languages[0]
	}
	if !slices.Contains(Languages, lang) {
		return certorder.NoticeAddress{}, fmt.Errorf("%w %q; the languages are %s", ErrLanguage, certorder.Cut(lang, 20), strings.Join(Languages, ", "))
	}
	chosen, err := ChooseEventTypes(types)
	if err != nil {
		return certorder.NoticeAddress{}, err
	}
	secret := make([]byte, 32)
	rand.Read(secret) // never fails (crypto/rand)
	return certorder.NoticeAddress{Address: address, Lang: lang, EventTypes: chosen,
		Secret: base64.StdEncoding.EncodeToString(secret)}, nil
}

// ChooseEventTypes checks the order events chosen: each one of
// certorder.OrderEventTypes, blanks skipped, repeats kept once.
func ChooseEventTypes(types []string) ([]string, error) {
	var chosen []string
	for _, t := range types {
		if t = strings.TrimSpace(t); t == "" || slices.Contains(chosen, t) {
			continue
		}
		if !slices.Contains(certorder.OrderEventTypes, t) {
			return nil, fmt.Errorf("%w %q; the types are %s", ErrEventType, certorder.Cut(t, 40), strings.Join(certorder.OrderEventTypes, ", "))
		}
		chosen = append(chosen, t)
	}
	return chosen, nil
}

// The links' tokens: "c.ID.EXPIRES.MAC" (confirm) and "u.ID.MAC"
// (unsubscribe), MAC the HMAC-SHA256 of what precedes it and the address,
// keyed by the address's own secret. A link names its address, so that
// the service finds the secret to check it with; it cannot be made for
// another address or another expiry, and removing the address (or adding
// it again: a new secret) voids it. The store makes a confirmation single
// use; an unsubscribe link works as long as the address exists. An address
// whose secret is not a key (CheckSecret: restored from a forged export)
// has no link that works.

// ConfirmToken is the token of address a's confirmation link, valid
// ConfirmFor from its creation.
func ConfirmToken(a certorder.NoticeAddress) string {
	payload := fmt.Sprintf("c.%d.%d", a.ID, a.CreatedAt.Add(ConfirmFor).Unix())
	return payload + "." + mac(a, payload)
}

// UnsubscribeToken is the token of address a's unsubscribe link.
func UnsubscribeToken(a certorder.NoticeAddress) string {
	payload := fmt.Sprintf("u.%d", a.ID)
	return payload + "." + mac(a, payload)
}

func mac(a certorder.NoticeAddress, payload string) string {
	key, _ := base64.StdEncoding.DecodeString(a.Secret)
	h := hmac.New(sha256.New, key)
	h.Write([]byte(payload + "." + a.Address))
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

// TokenAddress is the ID of the address a token names, and whether it
// names one, so that the caller can read the address and check the token
// against it.
func TokenAddress(token string) (int64, bool) {
	parts := strings.Split(token, ".")
	if len(parts) < 3 || len(token) > 200 {
		return 0, false
	}
	id, err := strconv.ParseInt(parts[1], 10, 64)
	return id, err == nil && id > 0
}

// CheckConfirmToken checks a confirmation token of address a at now:
// ErrLink if it is not a's, ErrExpired if it is too old. (That it was not
// used already is the store's ConfirmNoticeAddress.)
func CheckConfirmToken(a certorder.NoticeAddress, token string, now time.Time) error {
	parts := strings.Split(token, ".")
	if CheckSecret(a.Secret) != nil || len(parts) != 4 || parts[0] != "c" || !hmac.Equal([]byte(parts[3]), []byte(mac(a, strings.Join(parts[:3], ".")))) ||
		parts[1] != strconv.FormatInt(a.ID, 10) {
		return ErrLink
	}
	expires, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil {
		return ErrLink
	}
	if now.Unix() > expires {
		return ErrExpired
	}
	return nil
}

// CheckUnsubscribeToken checks an unsubscribe token of address a.
func CheckUnsubscribeToken(a certorder.NoticeAddress, token string) error {
	parts := strings.Split(token, ".")
	if CheckSecret(a.Secret) != nil || len(parts) != 3 || parts[0] != "u" || parts[1] != strconv.FormatInt(a.ID, 10) ||
		!hmac.Equal([]byte(parts[2]), []byte(mac(a, strings.Join(parts[:2], ".")))) {
		return ErrLink
	}
	return nil
}
