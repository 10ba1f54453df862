package notice

import (
	"encoding/base64"
	"fmt"

	"github.com/certorder/certorder"
)

// The key of an address's links (Secret): NewAddress makes 32 random bytes.
// A secret from elsewhere (a restore) must be one too: an empty or short
// key would let anyone make the address's unsubscribe link.
const (
	minSecretBytes = 32
	maxSecretBytes = 64
	// minSecretSymbols is fewer distinct bytes than 32 random bytes have
	// but once in 10^40: a key of few (all zeros) is not random.
	minSecretSymbols = 8
)

// ErrSecret is CheckSecret's error; it wraps certorder.ErrInvalid and never
// quotes the secret.
var ErrSecret = fmt.Errorf("%w: the address's secret is not a random key of %d to %d bytes in standard base64",
	certorder.ErrInvalid, minSecretBytes, maxSecretBytes)

// CheckSecret checks an address's secret as NewAddress makes one: the
// standard base64 of 32 to 64 bytes that are not all alike.
func CheckSecret(secret string) error {
	key, err := base64.StdEncoding.DecodeString(secret)
	if err != nil || len(key) < minSecretBytes || len(key) > maxSecretBytes {
		return ErrSecret
	}
	var seen [256]bool
	symbols := 0
	for _, b := range key {
		if !seen[b] {
			seen[b], symbols = true, symbols+1
		}
	}
	if symbols < minSecretSymbols {
		return ErrSecret
	}
	return nil
}
