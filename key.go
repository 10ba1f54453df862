package certorder

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"encoding/hex"
	"regexp"
	"strings"
)

// KeyPrefix starts every API key, so that secret scanners can recognise a leaked one.
const KeyPrefix = "cok_"

var keyEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// NewKey makes a new API key. The key text has the form cok_<id>_<secret>,
// where id is 48 random bits (the public key ID) and secret 192 random bits.
// Only the returned Key, which holds the hash, may be stored; the text is
// shown to the operator once.
func NewKey(label string) (text string, k Key, err error) {
	var b [6 + 24]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", Key{}, err
	}
	id := hex.EncodeToString(b[:6])
	text = KeyPrefix + id + "_" + strings.ToLower(keyEncoding.EncodeToString(b[6:]))
	return text, Key{ID: id, Label: label, Hash: HashKey(text)}, nil
}

// HashKey is the hash under which a key is stored. Keys carry 192 random
// bits, so a fast hash is enough: nothing is to be gained by guessing.
func HashKey(text string) []byte {
	h := sha256.Sum256(append(make([]byte, 0, 64), text...)) // a key (56 bytes) copied on the stack, not the heap
	return h[:]
}

// KeyID returns the public ID embedded in a key's text, or false if the text
// is not shaped like a key.
func KeyID(text string) (string, bool) {
	rest, ok := strings.CutPrefix(text, KeyPrefix)
	if !ok {
		return "", false
	}
	id, secret, ok := strings.Cut(rest, "_")
	if !ok || len(id) != 12 || len(secret) == 0 {
		return "", false
	}
	for _, c := range []byte(id) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return "", false
		}
	}
	return id, true
}

// Verify reports, in constant time, whether key text belongs to the
// credential and the credential may be used: key not revoked, member enabled,
// and the member's name is accessName.
func (c Credential) Verify(accessName, text string) bool {
	hashOK := subtle.ConstantTimeCompare(HashKey(text), c.KeyHash) == 1 // HashKey inlined: no allocation
	nameOK := subtle.ConstantTimeCompare([]byte(accessName), []byte(c.Member)) == 1
	return hashOK && nameOK && !c.KeyRevoked && !c.MemberDisabled
}

// keyShape is what RedactKeys hides: the prefix, the public ID if there is
// one, and everything after it up to a character no key holds.
var keyShape = regexp.MustCompile(`(?i)cok_([0-9a-f]{12}_)?[a-z0-9]*`)

// RedactKeys hides anything shaped like a key in text a caller chose (an
// AccessName, an action), for logs and the audit trail: a key sent in the
// wrong field must not be written in plaintext. The public key ID stays.
func RedactKeys(text string) string {
	if !containsKeyPrefix(text) {
		return text
	}
	return keyShape.ReplaceAllString(text, "cok_${1}[redacted]")
}

// containsKeyPrefix reports whether text holds KeyPrefix in any case,
// without allocating: RedactKeys runs for every audit entry.
func containsKeyPrefix(text string) bool {
	for i := 0; i+len(KeyPrefix) <= len(text); i++ {
		if c := text[i]; (c == 'c' || c == 'C') && strings.EqualFold(text[i:i+len(KeyPrefix)], KeyPrefix) {
			return true
		}
	}
	return false
}
