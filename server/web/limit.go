package web

import (
	"bytes"
	"math"
	"net/http"
	"strconv"
	"strings"
)

// limit answers 429 to a request Config.Admit refuses (the page's
// per-address limits), with Retry-After and a page in the request's
// language that says to wait; the static files are not counted. The pages
// are rendered once, at start, so that a flood costs a look-up and a write
// a request.
func (h *handler) limit(next http.Handler) http.Handler {
	if h.cfg.Admit == nil {
		return next
	}
	refused := map[*catalogue][]byte{}
	for _, cat := range h.cats {
		var buf bytes.Buffer
		v := view{Title: cat.S("error.title"), Lang: cat.lang, Data: cat.S("error.rate_limited")}
		if err := h.pages[cat.lang]["error"].ExecuteTemplate(&buf, "layout", v); err != nil {
			panic(err) // the templates are the binary's own and parsed already
		}
		refused[cat] = buf.Bytes()
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/static/") {
			next.ServeHTTP(w, r)
			return
		}
		ok, wait := h.cfg.Admit(r)
		if ok {
			next.ServeHTTP(w, r)
			return
		}
		hd := w.Header()
		hd.Set("Retry-After", strconv.FormatInt(int64(math.Max(1, math.Ceil(wait.Seconds()))), 10))
		hd.Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusTooManyRequests)
		w.Write(refused[h.chooseLanguage(r)])
	})
}
