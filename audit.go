package certorder

import (
	"strings"
	"time"
	"unicode/utf8"
)

// AuditEntry is one API call as the audit trail keeps it, or, for
// requests a limit refused before authentication, Count of them from one
// address in one flush interval (so that a flood is a few rows, not one a
// request). Member is the AccessName as sent (so failed attempts show whom
// they aimed at); KeyID is the key that authenticated the call, empty if
// none did; Outcome is 0 for success or the error number of the answer
// (see wire.Code).
type AuditEntry struct {
	Time     time.Time
	Member   string
	KeyID    string
	Action   string
	OrderID  int64
	Outcome  int
	ClientIP string
	Count    int // requests the entry stands for; 0 reads as 1
}

// AuditQuery selects audit entries: those of Member (all if empty) at or
// after Since, newest first, at most Limit (0: no limit).
type AuditQuery struct {
	Member string
	Since  time.Time
	Limit  int
}

// Bounds on what an audit entry keeps of what a caller sent; the API cuts
// what a request names to the exported ones, so that its log line and its
// audit entry say the same.
const (
	AuditMaxMember = 64
	AuditMaxAction = 32
	auditMaxIP     = 64
	auditMaxKeyID  = 32
)

// Trimmed cuts the caller-chosen texts of the entry to their bounds, so
// that a caller cannot fill the audit table with large values, makes them
// text every database takes (valid UTF-8 without NUL), and redacts a key
// sent in the wrong field. The key ID and the client address are only cut.
func (e AuditEntry) Trimmed() AuditEntry {
	e.Member = Cut(cleanText(RedactKeys(e.Member)), AuditMaxMember)
	e.Action = Cut(cleanText(RedactKeys(e.Action)), AuditMaxAction)
	e.KeyID = Cut(e.KeyID, auditMaxKeyID)
	e.ClientIP = Cut(e.ClientIP, auditMaxIP)
	return e
}

func cleanText(s string) string {
	if plainASCII(s) {
		return s // the usual case: nothing to replace, nothing to allocate
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// plainASCII reports whether s is ASCII without NUL.
func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == 0 || c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// Cut shortens s to at most n bytes without splitting a UTF-8 sequence.
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
