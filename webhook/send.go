package webhook

// One delivery's attempt, once the worker claimed it: sent in the
// background, its outcome recorded on the job and the endpoint's health.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/queue"
)

// start sends one claimed delivery in the background. The attempt must end
// before the lease does: leaseEnd less a margin for recording its outcome.
func (w *Worker) start(ctx context.Context, d Delivery, leaseEnd time.Time) {
	memberID := d.MemberID
	w.mu.Lock()
	w.inFlight++
	w.byEndpoint[d.EndpointID]++
	w.byMember[memberID]++
	w.started++
	w.served[memberID] = servedAt{seq: w.started, at: w.cfg.Now()}
	w.mu.Unlock()
	w.running.Add(1)
	go func() {
		defer w.running.Done()
		defer func() {
			w.mu.Lock()
			w.inFlight--
			if w.byEndpoint[d.EndpointID]--; w.byEndpoint[d.EndpointID] <= 0 {
				delete(w.byEndpoint, d.EndpointID)
			}
			if w.byMember[memberID]--; w.byMember[memberID] <= 0 {
				delete(w.byMember, memberID)
			}
			w.mu.Unlock()
			select {
			case w.freed <- struct{}{}:
			default:
			}
		}()
		margin := min(5*time.Second, w.cfg.Lease/4)
		actx, cancel := context.WithDeadline(ctx, leaseEnd.Add(-margin))
		defer cancel()
		if err := w.deliver(actx, ctx, d); err != nil && ctx.Err() == nil {
			w.cfg.Logger.Error("webhooks", "err", err)
		}
	}()
}

// deliver makes one attempt of a delivery (bounded by actx) and records
// what came of it (bounded by ctx).
func (w *Worker) deliver(actx, ctx context.Context, d Delivery) error {
	now := w.cfg.Now()
	o := queue.Outcome{JobID: d.ID, Owner: w.cfg.Owner, At: now}
	ep, err := w.cfg.Store.FindEndpoint(actx, d.EndpointID)
	switch {
	case errors.Is(err, certorder.ErrNotFound), err == nil && ep.MemberID != d.MemberID:
		// Deleted since it was queued (its ID perhaps another's now).
		o.State, o.Error = queue.Failed, "the endpoint was deleted"
		return w.cfg.Store.FinishJob(ctx, o)
	case err != nil:
		return err // the lease runs out and it is tried again
	}
	keys, err := signingKeys(&ep, now)
	if !ep.Enabled || err != nil {
		// Nothing is sent for an endpoint disabled since (or broken).
		o.State, o.Error = queue.Failed, "the endpoint is disabled"
		if err != nil {
			o.Error = err.Error()
		}
		o.Result = resultOf(Result{Class: "disabled"}, &ep)
		w.metrics.deliveries.WithLabelValues("disabled").Inc()
		return w.cfg.Store.FinishJob(ctx, o)
	}
	w.metrics.queueAge.Set(max(0, now.Sub(d.NextAttempt)).Seconds())
	res := Deliver(actx, w.cfg.Client, ep.URL, keys, d.MsgID, now, d.Body)
	if res.Class == ClassCanceled {
		return nil // shutting down: the lease runs out and it is sent again
	}
	w.metrics.deliveries.WithLabelValues(string(res.Class)).Inc()
	o.Result = resultOf(res, &ep)
	if res.Err != nil {
		o.Error = res.Err.Error()
	}
	if answer := strings.TrimSpace(Redact(res.Answer, &ep)); answer != "" && !res.Delivered() {
		// The receiver's own words say best why it refused: the member sees them.
		o.Error = strings.TrimPrefix(o.Error+": "+answer, ": ")
	}
	disable := ""
	switch attempt := d.Attempts + 1; {
	case res.Delivered():
		o.State = queue.Done
	case res.Gone():
		o.State, disable = queue.Failed, "the endpoint answered 410 Gone"
	case !ep.FailingSince.IsZero() && now.Sub(ep.FailingSince) >= w.cfg.DisableAfter:
		o.State = queue.Failed
		disable = fmt.Sprintf("no delivery succeeded since %s", ep.FailingSince.UTC().Format(time.RFC3339))
	case attempt >= MaxAttempts || !res.Retry():
		o.State = queue.Failed
	default:
		o.State, o.RunAfter = queue.Pending, now.Add(max(queue.Backoff(attempt, nil), res.RetryAfter))
	}
	if disable != "" {
		w.cfg.Logger.Warn("webhook endpoint disabled", "endpoint", ep.ID, "member_id", ep.MemberID, "reason", disable)
	}
	ctx = context.WithoutCancel(ctx)
	if err := w.cfg.Store.FinishJob(ctx, o); err != nil {
		return err
	}
	// The endpoint's health after the job's outcome: a crash between the
	// two leaves it one attempt behind, never a delivery sent twice.
	return w.cfg.Store.RecordEndpointAttempt(ctx, ep.ID, now, res.Delivered(), disable)
}

// signingKeys are the keys a message is signed with now: the endpoint's
// secret, and during a rotation the previous one too.
func signingKeys(ep *certorder.Endpoint, now time.Time) ([][]byte, error) {
	key, err := ParseSecret(ep.Secret)
	if err != nil {
		return nil, err
	}
	keys := [][]byte{key}
	if ep.PreviousSecret != "" && now.Before(ep.PreviousExpires) {
		if prev, err := ParseSecret(ep.PreviousSecret); err == nil {
			keys = append(keys, prev)
		}
	}
	return keys, nil
}
