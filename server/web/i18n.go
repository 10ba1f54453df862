package web

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"golang.org/x/text/language"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/client"
)

// The page's languages: one catalogue each, every string of the page in
// it. The API's texts are not here: they stay as the spec writes them.
//
//go:embed locales/*.json
var localeFiles embed.FS

// languages are the page's languages, the first the default.
var languages = []language.Tag{language.English, language.Japanese}

var matcher = language.NewMatcher(languages)

// langCookie remembers the language a member chose with the switch.
const langCookie = "certorder_lang"

// catalogue is one language's strings, by key. Values are fmt formats.
type catalogue struct {
	lang     string // BCP 47 tag: en, ja
	messages map[string]string
}

// loadCatalogues reads every language's catalogue and checks that they
// hold the same keys, so that no string is missing in one language.
func loadCatalogues() (map[string]*catalogue, error) {
	cats := map[string]*catalogue{}
	var keys []string
	for _, tag := range languages {
		lang := tag.String()
		b, err := localeFiles.ReadFile("locales/" + lang + ".json")
		if err != nil {
			return nil, err
		}
		c := &catalogue{lang: lang}
		if err := json.Unmarshal(b, &c.messages); err != nil {
			return nil, fmt.Errorf("web: catalogue %s: %w", lang, err)
		}
		these := slices.Sorted(maps.Keys(c.messages))
		if keys == nil {
			keys = these
		} else if !slices.Equal(keys, these) {
			return nil, fmt.Errorf("web: catalogue %s does not hold the same keys as %s", lang, languages[0])
		}
		cats[lang] = c
	}
	return cats, nil
}

// T returns the message key with args, or an error naming a missing key
// (a template fails on it, and the tests with it).
func (c *catalogue) T(key string, args ...any) (string, error) {
	m, ok := c.messages[key]
	if !ok {
		return "", fmt.Errorf("web: no message %q in catalogue %s", key, c.lang)
	}
	if len(args) == 0 {
		return m, nil
	}
	return fmt.Sprintf(m, args...), nil
}

// S is T for Go code, where every key is a constant: a missing one shows
// as its key rather than failing the page.
func (c *catalogue) S(key string, args ...any) string {
	m, err := c.T(key, args...)
	if err != nil {
		return key
	}
	return m
}

// N picks key.one or key.other by n, with n as the first argument.
func (c *catalogue) N(key string, n int, args ...any) (string, error) {
	form := ".other"
	if n == 1 {
		form = ".one"
	}
	return c.T(key+form, append([]any{n}, args...)...)
}

// notStated is what a null or absent value reads as.
func (c *catalogue) notStated() string { return c.S("value.not_stated") }

// Date formats a date of an order, in the catalogue's one date format.
// Text that is not a date is shown as it is; null or absent reads "not stated".
func (c *catalogue) Date(t client.Time) string {
	if t.IsZero() {
		if t.Raw == "" {
			return c.notStated()
		}
		return t.Raw
	}
	return t.UTC().Format(c.S("format.date"))
}

// Period is a span of two dates of an order: "not stated" once when
// neither is, and which end is missing when one is (never "not stated to
// not stated").
func (c *catalogue) Period(from, till client.Time) string {
	noFrom, noTill := from.IsZero() && from.Raw == "", till.IsZero() && till.Raw == ""
	switch {
	case noFrom && noTill:
		return c.notStated()
	case noTill:
		return c.S("field.from", c.Date(from))
	case noFrom:
		return c.S("field.to", c.Date(till))
	}
	return c.S("field.from_to", c.Date(from), c.Date(till))
}

// DateTime formats a date-time with its UTC offset as sent.
func (c *catalogue) DateTime(t client.Time) string {
	if t.IsZero() {
		if t.Raw == "" {
			return c.notStated()
		}
		return t.Raw
	}
	return t.Format(c.S("format.datetime"))
}

// Stamp formats a date or date-time stored as text (a certificate
// history's issue time, as CertCentral sent it) as Date does: every form
// client.Time reads, in the page's date format; other text as it is.
func (c *catalogue) Stamp(s string) string {
	var t client.Time
	b, _ := json.Marshal(s) // a string always marshals
	t.UnmarshalJSON(b)      // a JSON string always unmarshals
	return c.Date(t)
}

// Day formats a YYYY-MM-DD date as stored beside an order.
func (c *catalogue) Day(s string) string {
	t, err := time.Parse(certorder.DateLayout, s)
	if err != nil {
		if s == "" {
			return c.notStated()
		}
		return s
	}
	return t.Format(c.S("format.date"))
}

// Moment formats a time the service recorded (a key's creation), in UTC.
func (c *catalogue) Moment(t time.Time) string {
	if t.IsZero() {
		return c.notStated()
	}
	return t.UTC().Format(c.S("format.datetime"))
}

// Month names a month, with its year: "Dec 2026", "2026年12月".
func (c *catalogue) Month(t time.Time) string {
	return c.S("format.month", c.S(fmt.Sprintf("month.%d", t.Month())), t.Year())
}

// Value shows a text field of an order; empty reads "not stated".
func (c *catalogue) Value(s string) string {
	if s == "" {
		return c.notStated()
	}
	return s
}

// Num shows a number field of an order; null or absent reads "not stated".
func (c *catalogue) Num(n client.Int) string {
	if !n.Valid {
		return c.notStated()
	}
	return n.String()
}

type langKey struct{}

// chooseLanguage picks the request's language: the switch's cookie, else
// the best match of Accept-Language, else English.
func (h *handler) chooseLanguage(r *http.Request) *catalogue {
	if c, err := r.Cookie(langCookie); err == nil {
		if cat, ok := h.cats[c.Value]; ok {
			return cat
		}
	}
	tags, _, _ := language.ParseAcceptLanguage(r.Header.Get("Accept-Language"))
	_, i, _ := matcher.Match(tags...)
	return h.cats[languages[i].String()]
}

// withLanguage puts the request's catalogue in its context.
func (h *handler) withLanguage(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Add("Vary", "Accept-Language, Cookie")
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), langKey{}, h.chooseLanguage(r))))
	})
}

// cat is the request's catalogue.
func (h *handler) cat(r *http.Request) *catalogue {
	if c, ok := r.Context().Value(langKey{}).(*catalogue); ok {
		return c
	}
	return h.cats[languages[0].String()]
}

// setLanguage remembers the language chosen with the switch and goes back
// to the page it was chosen on (a path of this site only).
func (h *handler) setLanguage(w http.ResponseWriter, r *http.Request) {
	lang := r.URL.Query().Get("l")
	if _, ok := h.cats[lang]; !ok {
		h.notFound(w, r, nil)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: langCookie, Value: lang, Path: "/", MaxAge: 365 * 24 * 3600, HttpOnly: true,
		SameSite: http.SameSiteLaxMode, Secure: h.secure(r)})
	http.Redirect(w, r, localPath(r.URL.Query().Get("next")), http.StatusSeeOther)
}

// localPath returns p if it is a path on this site, else "/": the language
// switch must not redirect elsewhere, nor put raw control bytes, spaces or
// backslashes in the Location header (the switch's own links escape them).
func localPath(p string) string {
	if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") ||
		strings.ContainsFunc(p, func(r rune) bool { return r <= ' ' || r == 0x7f || r == '\\' }) {
		return "/"
	}
	if _, err := url.ParseRequestURI(p); err != nil {
		return "/"
	}
	return p
}
