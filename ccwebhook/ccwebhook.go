// Package ccwebhook receives DigiCert CertCentral's own webhook: the
// receiver (POST /certcentral/webhook on serve's main listener) checks
// the secret and the source, records each order event durably as a job
// of the one queue (kind queue.KindCertCentralEvent, one pending job per
// order) and answers at once; the Worker applies the jobs through the
// sync's one path (ccsync.Syncer.Apply: an Order info fetch under the sync
// lock, within the client's rate limits), so that members hear of a
// revocation, a reissue or a renewal in seconds. The poll (--sync-every)
// stays as the reconciliation; a change it finds that no event announced
// is counted (Witness). docs/SYNC.md, "CertCentral's webhook".
package ccwebhook

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/certorder/certorder/digicert"
	"github.com/certorder/certorder/internal/storekit"
	"github.com/certorder/certorder/queue"
)

// Path is where serve receives the webhook.
const Path = "/certcentral/webhook"

// MaxBody bounds an event's body: CertCentral's are well under a KiB
// (64 KiB leaves room for a certificate chain in certificate_issued).
const MaxBody = 64 << 10

// Store is what the receiver and the worker need of the store: the queue,
// and the record of the last event and challenge.
type Store interface {
	queue.Store
	storekit.CertCentralWebhookStore
}

// Payload is a job's: the event that queued it (the first, when copies
// joined it).
type Payload struct {
	Event         string    `json:"event"`
	OrderID       int64     `json:"order_id"`
	CertificateID int64     `json:"certificate_id,omitempty"`
	ReceivedAt    time.Time `json:"received_at"`
}

// job is the queue's job for an order's event: keyed by the order, so
// that copies of it (a burst, DigiCert sending again) wait as one.
func job(p Payload) (queue.Job, error) {
	b, err := json.Marshal(p)
	return queue.Job{Kind: queue.KindCertCentralEvent, SubjectID: p.OrderID, Key: fmt.Sprint(p.OrderID), Payload: b}, err
}

func payloadOf(j queue.Job) (Payload, error) {
	var p Payload
	if err := json.Unmarshal(j.Payload, &p); err != nil || p.OrderID <= 0 {
		return p, errors.Join(errors.New("ccwebhook: a job's payload is not an order's event"), err)
	}
	return p, nil
}

// documented are CertCentral's event types ("CertCentral event types"),
// the values of the metrics' event label; any other is "other".
var documented = []string{digicert.EventTest, digicert.EventChallenge, digicert.EventCertificateIssued,
	digicert.EventCertificateRevoked, digicert.EventOrderRejected, "domain_validated", "organization_validated",
	"domain_expired", "organization_expired", "domain_revalidation_notice", "organization_revalidation_notice"}

// eventLabel is an event's name as a label: bounded whatever is sent.
func eventLabel(name string) string {
	if slices.Contains(documented, name) {
		return name
	}
	return "other"
}

// The outcomes of an event received (certorder_certcentral_webhook_events_total).
const (
	Applied = "applied" // an order's event queued to be applied, or a challenge's token kept
	Ignored = "ignored" // the test event, or an event certorder has nothing to do with
	Refused = "refused" // the key or the source address refused: 401 or 403
	Invalid = "invalid" // not a POST (405), over MaxBody (413), not an event (400)
	Failed  = "error"   // the store failed: 503
)

// Metrics are the webhook's.
type Metrics struct {
	events *prometheus.CounterVec // by event and outcome
	apply  prometheus.Histogram
	missed prometheus.Counter
	rounds prometheus.Counter
}

// NewMetrics registers the webhook's metrics with reg (nil: nowhere).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		events: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "certorder_certcentral_webhook_events_total",
			Help: "Requests to the CertCentral webhook receiver by event (none: not read) and outcome: applied (queued to be applied, or a challenge kept), ignored, refused (key or source), invalid, error (the store failed)."},
			[]string{"event", "outcome"}),
		apply: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "certorder_certcentral_webhook_apply_seconds",
			Help:    "Time from a CertCentral event's receipt to its order stored and the members' events made.",
			Buckets: []float64{.05, .1, .25, .5, 1, 2, 5, 10, 30, 60, 300, 1800}}),
		missed: prometheus.NewCounter(prometheus.CounterOpts{Name: "certorder_certcentral_webhook_missed_total",
			Help: "Changes of status (issued, revoked, rejected) the poll found and stored that no CertCentral event had announced."}),
		rounds: queue.RoundsCounter("certcentral"),
	}
	for _, ev := range digicert.OrderEvents {
		m.events.WithLabelValues(ev, Applied)
	}
	m.events.WithLabelValues("none", Refused)
	m.events.WithLabelValues("none", Invalid)
	if reg != nil {
		reg.MustRegister(m.events, m.apply, m.missed, m.rounds)
	}
	return m
}
