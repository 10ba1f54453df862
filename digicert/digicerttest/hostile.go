package digicerttest

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// Hostile is how a broken or hostile CertCentral misbehaves (SetHostile).
// The zero value is a well-behaved one.
type Hostile struct {
	// EndlessPages: List orders and the status change list answer every
	// page full (the limit asked), with orders never seen before, and List
	// orders' page object always promises more. Paging never ends.
	EndlessPages bool
	// HugeAnswer: every answer of those two endpoints and of Order info is
	// a JSON document of this many bytes (a list padded with entries),
	// streamed, so the simulator itself holds none of it.
	HugeAnswer int64
	// ErrorBody: the failures FailNext injects carry, in the documented
	// error shape, a message of this many bytes, full of terminal escape
	// sequences and with the API key in it.
	ErrorBody int64
}

// SetHostile makes the simulator misbehave as h says, until called again.
func (s *Server) SetHostile(h Hostile) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hostile = h
}

// serveHostile answers r as s.hostile says; false leaves it to the
// well-behaved handlers. Called with s.mu held.
func (s *Server) serveHostile(w http.ResponseWriter, r *http.Request) bool {
	h := s.hostile
	ep := endpointOf(r)
	if ep == EndpointOther {
		return false
	}
	if h.HugeAnswer > 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		const open, item, closing = `{"orders":[`, `{"order_id":1,"certificate_id":1,"status":"issued"},`, `{}]}`
		io.WriteString(w, open)
		for n := int64(len(open) + len(closing)); n+int64(len(item)) <= h.HugeAnswer; n += int64(len(item)) {
			if _, err := io.WriteString(w, item); err != nil {
				return true // the client gave up
			}
		}
		io.WriteString(w, closing)
		return true
	}
	if !h.EndlessPages || ep == EndpointOrderInfo {
		return false
	}
	q := r.URL.Query()
	offset, _ := strconv.Atoi(q.Get("offset"))
	limit, _ := strconv.Atoi(q.Get("limit"))
	if limit <= 0 {
		limit = 1000
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	var b strings.Builder
	b.WriteString(`{"orders":[`)
	for i := range limit {
		if i > 0 {
			b.WriteByte(',')
		}
		id := 9_000_000 + offset + i
		if ep == EndpointStatusChanges {
			fmt.Fprintf(&b, `{"order_id":%d,"certificate_id":%d,"status":"issued"}`, id, id)
		} else {
			fmt.Fprintf(&b, `{"id":%d,"status":"issued","certificate":{"id":%d,"common_name":"endless%d.example.com"},"container":{"id":1}}`, id, id, id)
		}
	}
	fmt.Fprintf(&b, `],"page":{"total":%d,"limit":%d,"offset":%d}}`, offset+2*limit, limit, offset)
	io.WriteString(w, b.String())
	return true
}

// errorMessage is an injected failure's message: the usual one, or as
// Hostile.ErrorBody asks, a huge one with escapes and the key.
func (s *Server) errorMessage(usual string) string {
	if s.hostile.ErrorBody <= 0 {
		return usual
	}
	unit := "\x1b]0;pwned\x07\x1b[2J\x1b[31mFAIL " + s.key + " \u202e"
	return strings.Repeat(unit, int(s.hostile.ErrorBody)/len(unit)+1)[:s.hostile.ErrorBody]
}
