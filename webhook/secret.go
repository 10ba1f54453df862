package webhook

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/certorder/certorder/client"
)

// SecretPrefix starts every signing secret, so that people and secret
// scanners recognise one (the spec's serialization of a symmetric secret).
const SecretPrefix = "whsec_"

// The key lengths the spec allows for HMAC-SHA256 secrets: 24 to 64 bytes.
const (
	minKeyLen = 24
	maxKeyLen = 64
	newKeyLen = 32
)

// ErrMalformedSecret is returned by ParseSecret for anything that is not
// whsec_ followed by the base64 of a 24- to 64-byte key.
var ErrMalformedSecret = errors.New("webhook: malformed signing secret")

// NewSecret returns a fresh signing secret: whsec_ and the standard
// (padded) base64 of 32 random bytes, as the reference libraries read it.
func NewSecret() (string, error) {
	key := make([]byte, newKeyLen)
	if _, err := rand.Read(key); err != nil {
		return "", fmt.Errorf("webhook: making a secret: %w", err)
	}
	return SecretPrefix + base64.StdEncoding.EncodeToString(key), nil
}

// ParseSecret returns the key bytes of a whsec_ secret. Its errors match
// ErrMalformedSecret and never quote the secret.
func ParseSecret(secret string) ([]byte, error) {
	b64, ok := strings.CutPrefix(secret, SecretPrefix)
	if !ok {
		return nil, fmt.Errorf("%w: it does not start with %s", ErrMalformedSecret, SecretPrefix)
	}
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		// base64's own error names only a byte offset, never the content.
		return nil, fmt.Errorf("%w: %w", ErrMalformedSecret, err)
	}
	if len(key) < minKeyLen || len(key) > maxKeyLen {
		return nil, fmt.Errorf("%w: the key is %d bytes, want %d to %d", ErrMalformedSecret, len(key), minKeyLen, maxKeyLen)
	}
	return key, nil
}

// Sign returns the webhook-signature header value for one message: for
// each key, "v1," and the base64 HMAC-SHA256 of "msgID.unix-seconds.body",
// separated by spaces. Several keys are given while a secret is rotated (the
// old one stays valid for 24 h), so receivers holding either can verify.
// ts is the attempt's time, sent as webhook-timestamp; msgID must satisfy
// ValidMessageID. No keys gives "".
func Sign(keys [][]byte, msgID string, ts time.Time, body []byte) string {
	var b strings.Builder
	unix := strconv.FormatInt(ts.Unix(), 10)
	for i, key := range keys {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString("v1,")
		b.WriteString(base64.StdEncoding.EncodeToString(client.WebhookMAC(key, msgID, unix, body)))
	}
	return b.String()
}
