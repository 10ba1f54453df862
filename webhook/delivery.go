package webhook

import (
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/queue"
)

// A delivery is one message to one endpoint: a job of kind
// queue.KindWebhook whose subject is the endpoint. Its message ID and body
// are made once, when it is queued, so every retry sends exactly what was
// signed.

// MaxAttempts is how many attempts a delivery gets, the first included
// (queue.Backoff's schedule: about three days); after the last one fails
// the delivery is failed for good.
const MaxAttempts = queue.MaxAttempts

// Delivery states, as a member reads them.
const (
	StatePending   = "pending" // waiting for its first or next attempt, or under way
	StateDelivered = "delivered"
	StateFailed    = "failed"
)

// Delivery is a delivery job read back.
type Delivery struct {
	ID          int64
	EndpointID  int64
	MemberID    int64
	EventType   string
	MsgID       string
	Body        []byte
	State       string // StatePending, StateDelivered or StateFailed
	Attempts    int
	NextAttempt time.Time
	CreatedAt   time.Time

	LastAttempt time.Time
	LastStatus  int    // HTTP status of the last attempt, 0 if none came
	LastClass   string // the Class of the last attempt
	LastLatency time.Duration
	LastError   string
	// LastAnswer is the start of the receiver's answer to a delivered
	// message (AnswerExcerpt: at most MaxExcerpt bytes, printable, secrets
	// redacted); a failed attempt's answer is in LastError.
	LastAnswer string
	// AnswerKept says LastAnswer was recorded ("" then is an empty body):
	// deliveries made before answers were kept have none.
	AnswerKept bool
}

// payload is a delivery job's payload: the message, made once. The body is
// a JSON string, so its bytes come back exactly.
type payload struct {
	EventType string `json:"event_type"`
	MsgID     string `json:"msg_id"`
	Body      string `json:"body"`
}

// result is a delivery job's record of its last attempt.
type result struct {
	Status    int     `json:"status"`
	Class     string  `json:"class"`
	LatencyUS int64   `json:"latency_us"`
	Answer    *string `json:"answer,omitempty"` // delivered only: AnswerExcerpt (nil: recorded before answers were kept)
}

// NewDelivery is the job that delivers a message to the endpoint.
func NewDelivery(ep certorder.Endpoint, eventType, msgID string, body []byte) queue.Job {
	p, _ := json.Marshal(payload{eventType, msgID, string(body)}) // strings always marshal
	return queue.Job{Kind: queue.KindWebhook, MemberID: ep.MemberID, SubjectID: ep.ID, Payload: p}
}

// DeliveryOf reads a delivery job.
func DeliveryOf(j queue.Job) (Delivery, error) {
	var p payload
	if err := json.Unmarshal(j.Payload, &p); err != nil {
		return Delivery{}, fmt.Errorf("delivery %d: %w", j.ID, err)
	}
	d := Delivery{ID: j.ID, EndpointID: j.SubjectID, MemberID: j.MemberID, EventType: p.EventType, MsgID: p.MsgID,
		Body: []byte(p.Body), State: StatePending, Attempts: j.Attempts, NextAttempt: j.RunAfter, CreatedAt: j.CreatedAt,
		LastAttempt: j.LastAttempt, LastError: j.LastError}
	switch j.State {
	case queue.Done:
		d.State = StateDelivered
	case queue.Failed:
		d.State = StateFailed
	}
	if j.Result != nil {
		var r result
		if err := json.Unmarshal(j.Result, &r); err != nil {
			return Delivery{}, fmt.Errorf("delivery %d: %w", j.ID, err)
		}
		d.LastStatus, d.LastClass, d.LastLatency = r.Status, r.Class, time.Duration(r.LatencyUS)*time.Microsecond
		if r.Answer != nil {
			d.LastAnswer, d.AnswerKept = *r.Answer, true
		}
	}
	return d, nil
}

// resultOf is the record of an attempt to ep: with a delivered message,
// the excerpt of the receiver's answer (its status is there for every
// attempt that got one).
func resultOf(res Result, ep *certorder.Endpoint) []byte {
	r := result{res.Status, string(res.Class), res.Latency.Microseconds(), nil}
	if res.Delivered() {
		a := AnswerExcerpt(res.Answer, ep)
		r.Answer = &a
	}
	b, _ := json.Marshal(r) // always marshals
	return b
}

// MaxExcerpt bounds the excerpt of a delivered message's answer, in bytes.
const MaxExcerpt = 200

// anySecret is a signing secret, as certorder writes one, also as JSON
// (`\/`) or a URL's query (`%2F`) writes it.
var anySecret = regexp.MustCompile(`whsec_(?:[A-Za-z0-9+/=_-]|\\/|%[0-9A-Fa-f]{2})+`)

// AnswerExcerpt is what a member is shown of a receiver's answer: the
// endpoint's signing secrets (and anything written as one) redacted, runs
// of spaces and control characters made one space, only printable
// characters, at most MaxExcerpt bytes (cut at a character, marked "…").
func AnswerExcerpt(answer string, ep *certorder.Endpoint) string {
	answer = Redact(answer, ep)
	var b strings.Builder
	space := false
	for _, r := range strings.TrimSpace(answer) {
		switch {
		case unicode.IsSpace(r) || !unicode.IsPrint(r):
			space = true
			continue
		case space && b.Len() > 0:
			b.WriteByte(' ')
		}
		space = false
		if b.Len()+utf8.RuneLen(r) > MaxExcerpt-len("…") {
			b.WriteString("…")
			break
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Redact takes the endpoint's signing secrets (current and previous, as
// whsec_ and as their bare key) and anything written as a secret out of a
// receiver's answer before it is stored: a receiver that echoes what it
// was configured with must not show it on the page.
//
// The key is looked for as written, as JSON escapes it (`\/`) and as a
// URL's query encodes it; and since an answer is kept only up to
// MaxAnswer bytes, an answer that ends with the start of a key (8
// characters or more) has that end taken out too.
func Redact(answer string, ep *certorder.Endpoint) string {
	answer = anySecret.ReplaceAllString(answer, "whsec_(redacted)")
	if ep == nil {
		return answer
	}
	for _, s := range []string{ep.Secret, ep.PreviousSecret} {
		bare := strings.TrimPrefix(s, SecretPrefix)
		if len(bare) < 8 {
			continue
		}
		for _, form := range []string{bare, strings.ReplaceAll(bare, "/", `\/`), url.QueryEscape(bare)} {
			answer = strings.ReplaceAll(answer, form, "(redacted)")
			for n := len(form) - 1; n >= 8; n-- {
				if strings.HasSuffix(answer, form[:n]) {
					answer = answer[:len(answer)-n] + "(redacted)"
					break
				}
			}
		}
	}
	return answer
}
