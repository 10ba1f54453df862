package certorder

import "time"

// Session is a member's signed-in session on the web page. The cookie holds
// the token; the store keeps only its hash, so a copy of the database signs
// nobody in. Sessions live in the store, so every instance sharing it
// accepts them.
type Session struct {
	TokenHash []byte
	MemberID  int64
	Member    string
	KeyID     string // the key the member signed in with
	CSRF      string // token every form of the session carries
	Created   time.Time
	Expires   time.Time

	// Filled in by FindSession: a revoked key or a disabled member ends the
	// session; SelfServiceKeysOff is the member's (see Member).
	KeyRevoked         bool
	MemberDisabled     bool
	SelfServiceKeysOff bool
}

// Valid reports whether the session may be used at now.
func (s Session) Valid(now time.Time) bool {
	return now.Before(s.Expires) && !s.KeyRevoked && !s.MemberDisabled
}
