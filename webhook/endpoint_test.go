package webhook_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/certorder/certorder/webhook"
)

func TestNewEndpoint(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		url          string
		types        []string
		allowPrivate bool
		want         []string // the event types kept
		err          error
	}{
		{"https://hooks.example.com/x", nil, false, nil, nil},
		{"https://hooks.example.com/x", []string{"", " order.renewed ", "order.expiring", "order.renewed"}, false,
			[]string{"order.renewed", "order.expiring"}, nil},
		{"https://hooks.example.com/x", []string{"order.renewed", "webhook.test"}, false, nil, webhook.ErrUnknownEventType},
		{"http://hooks.example.com/x", nil, false, nil, webhook.ErrInvalidURL},
		{"http://127.0.0.1:8080/x", nil, false, nil, webhook.ErrInvalidURL},
		{"https://127.0.0.1:8080/x", nil, false, nil, webhook.ErrBlocked},
		{"https://[::1]/x", nil, false, nil, webhook.ErrBlocked},
		{"http://127.0.0.1:8080/x", []string{"order.status_changed"}, true, []string{"order.status_changed"}, nil},
		{"hooks.example.com/x", nil, true, nil, webhook.ErrInvalidURL},
	} {
		ep, err := webhook.NewEndpoint(tc.url, tc.types, tc.allowPrivate)
		if tc.err != nil {
			if !errors.Is(err, tc.err) || ep.Secret != "" {
				t.Errorf("webhook.NewEndpoint(%q, %q, %v) = %v, want %v and no secret", tc.url, tc.types, tc.allowPrivate, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("webhook.NewEndpoint(%q, %q, %v): %v", tc.url, tc.types, tc.allowPrivate, err)
			continue
		}
		if _, err := webhook.ParseSecret(ep.Secret); err != nil || ep.URL != tc.url || !slices.Equal(ep.EventTypes, tc.want) {
			t.Errorf("webhook.NewEndpoint(%q, %q) = %q %q (secret: %v), want types %q", tc.url, tc.types, ep.URL, ep.EventTypes, err, tc.want)
		}
	}
	a, _ := webhook.NewEndpoint("https://hooks.example.com/x", nil, false)
	b, _ := webhook.NewEndpoint("https://hooks.example.com/x", nil, false)
	if a.Secret == b.Secret {
		t.Error("two endpoints got the same secret")
	}
}
