package webhook

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/certorder/certorder"
)

// ErrUnknownEventType is matched by NewEndpoint's refusal of an event type
// that is not one of EventTypes.
var ErrUnknownEventType = errors.New("webhook: unknown event type")

// NewEndpoint checks a new endpoint's URL (CheckURL under allowPrivate) and
// event types (each one of EventTypes; blanks are skipped, repeats kept
// once; none means all of them) and gives it a fresh signing secret: the
// endpoint as the store's AddEndpoint takes it. The operator's command and
// the member's web page both add endpoints through it. Its errors match
// ErrInvalidURL, ErrBlocked or ErrUnknownEventType.
func NewEndpoint(url string, types []string, allowPrivate bool) (certorder.Endpoint, error) {
	if err := CheckURL(url, allowPrivate); err != nil {
		return certorder.Endpoint{}, err
	}
	var chosen []string
	for _, t := range types {
		if t = strings.TrimSpace(t); t == "" || slices.Contains(chosen, t) {
			continue
		}
		if !KnownEventType(t) {
			return certorder.Endpoint{}, fmt.Errorf("%w %q; the types are %s", ErrUnknownEventType, t, strings.Join(EventTypes(), ", "))
		}
		chosen = append(chosen, t)
	}
	secret, err := NewSecret()
	return certorder.Endpoint{URL: url, EventTypes: chosen, Secret: secret}, err
}
