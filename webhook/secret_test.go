package webhook_test

import (
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/certorder/certorder/webhook"
)

func TestNewSecret(t *testing.T) {
	t.Parallel()
	a, err := webhook.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := webhook.NewSecret()
	if a == b {
		t.Fatal("two secrets are equal")
	}
	if !strings.HasPrefix(a, "whsec_") || len(a) != len("whsec_")+44 {
		t.Fatalf("secret has the wrong form (length %d)", len(a))
	}
	key, err := webhook.ParseSecret(a)
	if err != nil {
		t.Fatal(err)
	}
	if len(key) != 32 {
		t.Fatalf("key is %d bytes, want 32", len(key))
	}
	if _, err := standardwebhooks.NewWebhook(a); err != nil {
		t.Fatalf("the reference library refuses the secret: %v", err)
	}
}

func TestParseSecretMalformed(t *testing.T) {
	t.Parallel()
	b64 := func(n int) string { return base64.StdEncoding.EncodeToString([]byte(strings.Repeat("k", n))) }
	for _, tc := range []struct{ name, secret string }{
		{"empty", ""},
		{"prefix only", "whsec_"},
		{"no prefix", b64(32)},
		{"other prefix", "whsk_" + b64(32)},
		{"not base64", "whsec_not*base64*at*all*not*base64*at*all*!!"},
		{"unpadded", "whsec_" + strings.TrimRight(b64(32), "=")},
		{"too short", "whsec_" + b64(16)},
		{"too long", "whsec_" + b64(65)},
		{"trailing space", "whsec_" + b64(32) + " "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key, err := webhook.ParseSecret(tc.secret)
			if !errors.Is(err, webhook.ErrMalformedSecret) {
				t.Fatalf("got key of %d bytes, err %v; want ErrMalformedSecret", len(key), err)
			}
			if rest := strings.TrimPrefix(tc.secret, "whsec_"); len(rest) > 8 && strings.Contains(err.Error(), rest[:8]) {
				t.Fatalf("error quotes the secret: %v", err)
			}
		})
	}
	for _, n := range []int{24, 64} {
		if _, err := webhook.ParseSecret("whsec_" + b64(n)); err != nil {
			t.Errorf("a %d-byte key: %v", n, err)
		}
	}
}

func mustKey(t *testing.T) (string, []byte) {
	t.Helper()
	s, err := webhook.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	k, err := webhook.ParseSecret(s)
	if err != nil {
		t.Fatal(err)
	}
	return s, k
}

func signedHeader(id string, ts time.Time, sig string) http.Header {
	h := http.Header{}
	h.Set("webhook-id", id)
	h.Set("webhook-timestamp", strconv.FormatInt(ts.Unix(), 10))
	h.Set("webhook-signature", sig)
	return h
}

// Sign is checked by the Standard Webhooks reference library, not by our own code.
func TestSignVerifiedByReference(t *testing.T) {
	t.Parallel()
	secret, key := mustKey(t)
	ref, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	id := webhook.NewMessageID()
	body := []byte(`{"type":"order.renewed","timestamp":"2026-11-21T10:00:00Z","data":{"order_id":10001,"renewed_order_id":10002}}`)

	now := time.Now()
	sig := webhook.Sign([][]byte{key}, id, now, body)
	if err := ref.Verify(body, signedHeader(id, now, sig)); err != nil {
		t.Fatalf("reference library: %v (signature %q)", err, sig)
	}
	// The same bytes as the reference's own signature, at a fixed time too.
	fixed := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	want, _ := ref.Sign(id, fixed, body)
	if got := webhook.Sign([][]byte{key}, id, fixed, body); got != want {
		t.Fatalf("Sign = %q, reference = %q", got, want)
	}

	// And it does refuse: another body, another id, another second.
	for name, h := range map[string]struct {
		hdr  http.Header
		body []byte
	}{
		"body":      {signedHeader(id, now, sig), append([]byte(" "), body...)},
		"id":        {signedHeader(id+"x", now, sig), body},
		"timestamp": {signedHeader(id, now.Add(-time.Second), sig), body},
	} {
		if err := ref.Verify(h.body, h.hdr); err == nil {
			t.Errorf("changed %s: the reference library accepts it", name)
		}
	}
}

func TestSignRotation(t *testing.T) {
	t.Parallel()
	oldSecret, oldKey := mustKey(t)
	newSecret, newKey := mustKey(t)
	otherSecret, _ := mustKey(t)
	id, now, body := webhook.NewMessageID(), time.Now(), []byte(`{"type":"webhook.test","timestamp":"2026-11-21T10:00:00Z","data":{}}`)

	sig := webhook.Sign([][]byte{newKey, oldKey}, id, now, body)
	if parts := strings.Split(sig, " "); len(parts) != 2 || !strings.HasPrefix(parts[0], "v1,") || !strings.HasPrefix(parts[1], "v1,") {
		t.Fatalf("two keys give %q, want two space-separated v1 signatures", sig)
	}
	for _, s := range []string{oldSecret, newSecret} {
		ref, _ := standardwebhooks.NewWebhook(s)
		if err := ref.Verify(body, signedHeader(id, now, sig)); err != nil {
			t.Errorf("one of the two secrets alone: %v", err)
		}
	}
	ref, _ := standardwebhooks.NewWebhook(otherSecret)
	if err := ref.Verify(body, signedHeader(id, now, sig)); err == nil {
		t.Error("a third secret verifies")
	}
	if got := webhook.Sign(nil, id, now, body); got != "" {
		t.Errorf("no keys: %q, want empty", got)
	}
}
