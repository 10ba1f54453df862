package notice

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/idna"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/printable"
)

// ConfirmFor is how long a confirmation link works after the address was
// added.
const ConfirmFor = 24 * time.Hour

// The bounds of RFC 5321 (4.5.3.1): a path of 256 octets less its angle
// brackets, a local part of 64, a domain of 255 less room for the rest, a
// label of 63 (RFC 1035).
const (
	maxAddress = 254
	maxLocal   = 64
	maxDomain  = 253
	maxLabel   = 63
)

// Errors of NewAddress and the links; every one wraps certorder.ErrInvalid.
var (
	ErrAddress   = fmt.Errorf("%w: not an e-mail address", certorder.ErrInvalid)
	ErrLanguage  = fmt.Errorf("%w: unknown language", certorder.ErrInvalid)
	ErrEventType = fmt.Errorf("%w: unknown event type", certorder.ErrInvalid)
	ErrLink      = fmt.Errorf("%w: the link is not valid", certorder.ErrInvalid)
	ErrExpired   = fmt.Errorf("%w: the link has expired", certorder.ErrInvalid)
)

// CheckAddress is the one rule for a notice address, whatever adds it (the
// member's page, admin notice add, a restore): an allow-list, not a parse of
// everything RFC 5322 permits. It returns the address as it is stored and
// sent: in lower case, its domain in A-labels. It takes
//
//   - a local part of ASCII letters, digits and !#$%&'*+-/=?^_`{|}~, in
//     dot-separated atoms, at most 64 octets, and not an encoded word
//     ("=?utf-8?q?...?="): no quoted strings, no UTF-8 (many relays take
//     neither, and a person cannot check what they read);
//   - a domain of at least two labels of letters, digits and inner hyphens,
//     each at most 63 octets, its last not all digits (no bare IP address),
//     at most 253 octets; an internationalised one is taken as its A-labels
//     (IDNA, UTS #46 lookup); no address literal ([127.0.0.1]);
//   - nothing invisible or not printable anywhere (U+202E, U+200B, ...), and
//     at most 254 octets in all.
func CheckAddress(address string) (string, error) {
	address = strings.Trim(address, " \t") // what a form or a shell leaves around it, and nothing else
	refuse := func(why string) (string, error) {
		return "", fmt.Errorf("%w: %s: %s (want name@example.com)", ErrAddress, printable.Cut(address, 100), why)
	}
	for _, r := range address {
		if !unicode.IsGraphic(r) || unicode.IsSpace(r) || r == utf8.RuneError {
			return refuse("it holds a space, a control or an invisible character")
		}
	}
	at := strings.LastIndexByte(address, '@')
	if at < 0 {
		return refuse("no @")
	}
	local, domain := address[:at], address[at+1:]
	switch {
	case local == "" || len(local) > maxLocal:
		return refuse(fmt.Sprintf("the part before the @ must be 1 to %d characters", maxLocal))
	case !dotAtom(local):
		return refuse("the part before the @ may hold only ASCII letters, digits, dots (not two together, nor first or last) and !#$%&'*+-/=?^_`{|}~")
	case strings.Contains(local, "=?") || strings.Contains(local, "?="):
		return refuse("the part before the @ reads as an encoded word")
	case strings.HasPrefix(domain, "["):
		return refuse("an address literal is not taken: give a domain")
	}
	ascii, err := idna.Lookup.ToASCII(domain)
	if err != nil {
		return refuse("the domain is not a valid domain name")
	}
	ascii = strings.ToLower(ascii)
	if len(ascii) > maxDomain {
		return refuse(fmt.Sprintf("the domain is longer than %d characters", maxDomain))
	}
	labels := strings.Split(ascii, ".")
	if len(labels) < 2 {
		return refuse("the domain needs a dot, such as example.com")
	}
	for _, l := range labels {
		if !ldhLabel(l) {
			return refuse(fmt.Sprintf("each part of the domain is 1 to %d letters, digits or inner hyphens", maxLabel))
		}
	}
	if strings.Trim(labels[len(labels)-1], "0123456789") == "" {
		return refuse("an IP address is not taken: give a domain")
	}
	address = strings.ToLower(local) + "@" + ascii
	if len(address) > maxAddress {
		return refuse(fmt.Sprintf("longer than %d characters", maxAddress))
	}
	return address, nil
}

// dotAtom reports whether s is RFC 5322's dot-atom-text, in ASCII.
func dotAtom(s string) bool {
	for _, atom := range strings.Split(s, ".") {
		if atom == "" || strings.IndexFunc(atom, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("!#$%&'*+-/=?^_`{|}~", r))
		}) >= 0 {
			return false
		}
	}
	return true
}

// ldhLabel reports whether l is a DNS label of letters, digits and
// hyphens, 1 to 63 octets, not starting or ending with a hyphen.
func ldhLabel(l string) bool {
	if l == "" || len(l) > maxLabel || l[0] == '-' || l[len(l)-1] == '-' {
		return false
	}
	return strings.IndexFunc(l, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') }) < 0
}

// NewAddress checks a new address (CheckAddress), its language (en, ja; ""
// is en) and event types (each an order event; blanks skipped, repeats
// kept once; none means all), and gives it a fresh secret: the address as
// the store's AddNoticeAddress takes it. The operator's command and the
// member's web page both add addresses through it.
func NewAddress(address, lang string, types []string) (certorder.NoticeAddress, error) {
	address, err := CheckAddress(address)
	if err != nil {
		return certorder.NoticeAddress{}, err
	}
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

// The links' tokens: "c.ID.EXPIRES.MAC" (confirm), "u.ID.MAC"
// (unsubscribe) and "b.ID.MAC" (block: refuse every later confirmation),
// MAC the HMAC-SHA256 of what precedes it and the address, keyed by the
// address's own secret. A link names its address, so that the service
// finds the secret to check it with; it cannot be made for another address
// or another expiry, and removing the address (or adding it again: a new
// secret) voids a confirm or unsubscribe link. The store makes a
// confirmation single use; an unsubscribe link works as long as the
// address exists. A block link is checked against the store's record of
// the confirmation it came in (certorder.NoticeConfirmation, which keeps
// the address and its secret), so that it works after the address was
// removed: that is what a flood of confirmations does. An address whose
// secret is not a key (CheckSecret: restored from a forged export) has no
// link that works.

// ConfirmToken is the token of address a's confirmation link, valid
// ConfirmFor from its creation.
func ConfirmToken(a certorder.NoticeAddress) string {
	payload := fmt.Sprintf("c.%d.%d", a.ID, a.CreatedAt.Add(ConfirmFor).Unix())
	return payload + "." + mac(a.Secret, a.Address, payload)
}

// UnsubscribeToken is the token of address a's unsubscribe link.
func UnsubscribeToken(a certorder.NoticeAddress) string {
	payload := fmt.Sprintf("u.%d", a.ID)
	return payload + "." + mac(a.Secret, a.Address, payload)
}

// BlockToken is the token of the block link in address a's confirmation.
func BlockToken(a certorder.NoticeAddress) string {
	payload := fmt.Sprintf("b.%d", a.ID)
	return payload + "." + mac(a.Secret, a.Address, payload)
}

// mac is the MAC of a link's payload for an address; "" when the secret is
// not a key (CheckSecret), so that no link of it can be forged by guessing.
func mac(secret, address, payload string) string {
	if CheckSecret(secret) != nil {
		return ""
	}
	key, _ := base64.StdEncoding.DecodeString(secret)
	h := hmac.New(sha256.New, key)
	h.Write([]byte(payload + "." + address))
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

// signed reports whether a token's last part is the MAC of the parts
// before it, for the address and its secret.
func signed(secret, address string, parts []string) bool {
	want := mac(secret, address, strings.Join(parts[:len(parts)-1], "."))
	return want != "" && hmac.Equal([]byte(parts[len(parts)-1]), []byte(want))
}

// CheckConfirmToken checks a confirmation token of address a at now:
// ErrLink if it is not a's, ErrExpired if it is too old. (That it was not
// used already is the store's ConfirmNoticeAddress.)
func CheckConfirmToken(a certorder.NoticeAddress, token string, now time.Time) error {
	parts := strings.Split(token, ".")
	if len(parts) != 4 || parts[0] != "c" || !signed(a.Secret, a.Address, parts) ||
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
	if len(parts) != 3 || parts[0] != "u" || parts[1] != strconv.FormatInt(a.ID, 10) ||
		!signed(a.Secret, a.Address, parts) {
		return ErrLink
	}
	return nil
}

// CheckBlockToken finds the confirmation, among those recorded for the
// address the token names, whose block link it is: ErrLink if none.
func CheckBlockToken(cs []certorder.NoticeConfirmation, token string) (certorder.NoticeConfirmation, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 || parts[0] != "b" {
		return certorder.NoticeConfirmation{}, ErrLink
	}
	for _, c := range cs {
		if parts[1] == strconv.FormatInt(c.AddressID, 10) && signed(c.Secret, c.Address, parts) {
			return c, nil
		}
	}
	return certorder.NoticeConfirmation{}, ErrLink
}
