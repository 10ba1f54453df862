package notice_test

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/notice"
)

// A secret is a key as NewAddress makes one; an address whose secret is
// not (restored from a forged export before restores checked) has no link
// that checks, so that nobody can make one with an empty key.
func TestCheckSecret(t *testing.T) {
	t.Parallel()
	fresh, err := notice.NewAddress("ops@a.example", "en", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := notice.CheckSecret(fresh.Secret); err != nil {
		t.Fatalf("a fresh secret: %v", err)
	}
	b64 := base64.StdEncoding.EncodeToString
	for name, secret := range map[string]string{
		"empty": "", "one letter": "x", "x in base64": "eA==", "short": b64([]byte("0123456789abcdef0123456789abcde")),
		"zeros": b64(make([]byte, 32)), "two symbols": b64([]byte(strings.Repeat("ab", 16))),
		"too long": b64([]byte(strings.Repeat("0123456789abcdef", 5))), "not base64": fresh.Secret[1:],
		"URL base64": base64.URLEncoding.EncodeToString([]byte(strings.Repeat("\xfb\xff", 16) + "0123456789abcdef")),
	} {
		if err := notice.CheckSecret(secret); !errors.Is(err, notice.ErrSecret) || !errors.Is(err, certorder.ErrInvalid) {
			t.Errorf("%s: %v, want ErrSecret", name, err)
		}
		weak := fresh
		weak.Secret = secret
		if err := notice.CheckUnsubscribeToken(weak, notice.UnsubscribeToken(weak)); !errors.Is(err, notice.ErrLink) {
			t.Errorf("%s: its own unsubscribe token checks: %v", name, err)
		}
		if err := notice.CheckConfirmToken(weak, notice.ConfirmToken(weak), now); !errors.Is(err, notice.ErrLink) {
			t.Errorf("%s: its own confirmation token checks: %v", name, err)
		}
	}
}
