package server

import (
	"hash/maphash"
	"net/http"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/wire"
)

// The member web page's per-address limits, apart from the API's: buckets
// of their own (a flood of the page spends no API budget), in shards (a
// flood from many addresses contends on no one lock, the API's least).
// Every request to the page but its static files takes a token of its
// address's page bucket (Limits.WebRate, WebBurst), and a POST (a form:
// sign-in, a signed-in action, a message's confirm or unsubscribe) one of
// its form bucket as well, a fifth as fast (webFormShare). A refusal is
// cheap: a map look-up and a page rendered once per language.

// webFormShare is the form buckets' share of the page rate and burst.
const webFormShare = 5

// webShards is how many locks the web buckets are spread over.
const webShards = 16

type webLimits struct {
	seed         maphash.Seed
	pages, forms [webShards]*buckets
}

// newWebLimits returns the page's limits; nil when l.WebRate is 0 (off).
func newWebLimits(l Limits) *webLimits {
	if l.WebRate <= 0 {
		return nil
	}
	w := &webLimits{seed: maphash.MakeSeed()}
	for i := range webShards {
		w.pages[i] = newBuckets(l.WebRate, l.WebBurst)
		w.forms[i] = newBuckets(l.WebRate/webFormShare, max(l.WebBurst/webFormShare, 1))
	}
	return w
}

// take spends what a request of the address key costs at now; when it is
// refused, it says how long until it would not be.
func (w *webLimits) take(key string, form bool, now time.Time) (bool, time.Duration) {
	i := maphash.String(w.seed, key) % webShards
	if ok, wait := w.pages[i].take(key, now); !ok {
		return false, wait
	}
	if form {
		return w.forms[i].take(key, now)
	}
	return true, 0
}

// admitWeb is the web page's Config.Admit when its limits are on: the
// limits of the request's address. A refusal is counted in the metrics
// and, per address, in the audit trail (one entry a flush with its count,
// as the API's refusals before authentication: a flood is not a flood of
// entries).
func (s *Server) admitWeb(r *http.Request) (bool, time.Duration) {
	ip := clientIP(r, s.cfg.Limits.TrustedProxies)
	now := s.cfg.Now()
	ok, wait := s.web.take(limitKey(ip), r.Method == http.MethodPost, now)
	if !ok {
		s.metrics.limited.WithLabelValues("web").Inc()
		if s.audit != nil {
			s.audit.refuse(certorder.AuditEntry{Time: now, Action: "web", Outcome: int(wire.RateLimited), ClientIP: ip})
		}
	}
	return ok, wait
}
