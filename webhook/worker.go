package webhook

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/storekit"
	"github.com/certorder/certorder/notice"
	"github.com/certorder/certorder/queue"
)

// Store is what a Worker needs of the store: the queue, the events to fan
// out, the endpoints, and the orders whose end comes near.
type Store interface {
	queue.Store
	// FanOut takes up to limit events not yet fanned out and, in one
	// transaction, queues the job build makes of each for every enabled
	// endpoint of the event's member that wants its type (build gets the
	// endpoint's ID, member and format). Instances sharing the store never
	// take the same event.
	FanOut(ctx context.Context, limit int, build func(ev certorder.Event, ep certorder.Endpoint) (queue.Job, error)) (int, error)
	// FindEndpoint returns one endpoint; ErrNotFound if none.
	FindEndpoint(ctx context.Context, id int64) (certorder.Endpoint, error)
	// RecordEndpointAttempt records how an attempt to endpoint id went: a
	// success (ok), a failure that disables it (disable: why), or another
	// failure (failing since the first of them).
	RecordEndpointAttempt(ctx context.Context, id int64, at time.Time, ok bool, disable string) error
	// EndingOrders lists the orders whose certificate's end (typ
	// order.expiring) or plan's end (order.plan_ending) is between from
	// and to (YYYY-MM-DD, inclusive), of members with an enabled endpoint
	// or an active notice address wanting typ, renewed or not (the worker
	// decides by Windows.Next).
	EndingOrders(ctx context.Context, typ, from, to string) ([]storekit.EndingOrder, error)
	// RecordEnding records an event of type typ for the order and marks
	// the thresholds as told for the order's current end (End), in one
	// transaction; a threshold told already makes it a no-op (false). A
	// new end (a reissued certificate) is told afresh.
	RecordEnding(ctx context.Context, typ string, o storekit.EndingOrder, thresholds []int, data []byte, at time.Time) (bool, error)
	// PruneEvents deletes the events fanned out before before.
	PruneEvents(ctx context.Context, before time.Time) error
}

// Worker delivers the store's webhook events in the background: it fans
// new events out to the endpoints that want them, finds the orders nearing
// expiry without a successor, and delivers what is due, retrying on the
// queue.Backoff schedule. Several workers on one PostgreSQL store share the work:
// the store hands each event and each due delivery to one of them.
//
// Delivery is fair: each claim takes at most one delivery per member, and
// no endpoint has more than PerEndpoint (no member more than PerMember) in
// flight. The members come in the order of fair queuing: first those this
// worker has not served lately, then the others by how many deliveries
// they have in flight, then by how long ago it last started one of theirs
// (oldest due delivery breaking ties). So members whose endpoints hang,
// however many, hold places only while no one else waits: each place that
// comes free goes to a member waiting its turn before theirs, and every
// place comes free within an attempt's timeout. A delivery is claimed only
// when a place is free to send it at once, and its attempt ends before
// its lease does, so no other instance can take it while it is being sent.
type Worker struct {
	cfg     WorkerConfig
	metrics *workerMetrics

	expiringScanned, pruned time.Time

	mu         sync.Mutex
	inFlight   int
	byEndpoint map[int64]int
	byMember   map[int64]int
	served     map[int64]servedAt // members served within servedMemory, or in flight
	started    uint64             // deliveries started so far: served's clock
	running    sync.WaitGroup
	freed      chan struct{} // a place came free
}

// WorkerConfig is what a Worker needs.
type WorkerConfig struct {
	Store      Store
	Owner      string           // the instance, as its claims name it; "": the host and process
	Client     *http.Client     // NewHTTPClient's; nil: NewHTTPClient(Options{})
	Now        func() time.Time // nil: time.Now
	Logger     *slog.Logger     // nil: none
	Metrics    prometheus.Registerer
	Thresholds []int // order.expiring thresholds in days; nil: DefaultThresholds
	// PlanThresholds are order.plan_ending's; nil: DefaultPlanThresholds.
	PlanThresholds []int
	// Windows name the next step in the events' data; zero: certorder.DefaultWindows.
	Windows certorder.Windows
	// Orders reads an event's order for a chat room's line (FormatSlack
	// endpoints); nil: the line without the order's common name.
	Orders notice.OrderFinder
	// Texts say an event in a chat room's line (its PublicURL the base of
	// the order's link).
	Texts        notice.Texts
	Poll         time.Duration // how often to look for work; 0: 1s
	Concurrency  int           // deliveries at once; 0: DefaultConcurrency
	PerEndpoint  int           // deliveries at once to one endpoint; 0: DefaultPerEndpoint
	PerMember    int           // deliveries at once to one member's endpoints; 0: DefaultPerMember
	Lease        time.Duration // a delivery taken is another worker's again after this (a crash); 0: a minute. An attempt is cut short before it runs out.
	DisableAfter time.Duration // an endpoint failing this long is disabled; 0: DefaultDisableAfter
}

// Defaults of WorkerConfig.
var (
	DefaultThresholds = []int{30, 7, 1}
	// DefaultPlanThresholds are CertCentral's own renewal notices' first
	// four (send_minus_90, 60, 30 and 7).
	DefaultPlanThresholds = []int{90, 60, 30, 7}
	DefaultDisableAfter   = 72 * time.Hour
	DefaultConcurrency    = 32
	DefaultPerEndpoint    = 2
	DefaultPerMember      = 4
)

// servedAt is when the worker last started a delivery of a member.
type servedAt struct {
	seq uint64 // Worker.started then: orders members started in one claim too
	at  time.Time
}

// servedMemory is how long the worker remembers starting a member's
// delivery: a member not served for this long comes first again. It is far
// longer than a round of every member's turn (with 32 places and 5 s
// attempts, 1,000 members take 2.6 min).
const servedMemory = 10 * time.Minute

const (
	expiringEvery = time.Hour      // how often orders near expiry are looked for
	pruneEvery    = 24 * time.Hour // how often old events and finished deliveries are deleted
	keepFinished  = 30 * 24 * time.Hour
	batch         = 100
)

type workerMetrics struct {
	deliveries *prometheus.CounterVec // by outcome
	queueAge   prometheus.Gauge
	rounds     prometheus.Counter
}

// NewWorker returns a worker; Run starts it.
func NewWorker(cfg WorkerConfig) *Worker {
	if cfg.Client == nil {
		cfg.Client = NewHTTPClient(Options{})
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Owner == "" {
		cfg.Owner = queue.Owner("webhooks")
	}
	if len(cfg.Thresholds) == 0 {
		cfg.Thresholds = DefaultThresholds
	}
	cfg.Thresholds = slices.Sorted(slices.Values(cfg.Thresholds))
	if len(cfg.PlanThresholds) == 0 {
		cfg.PlanThresholds = DefaultPlanThresholds
	}
	cfg.PlanThresholds = slices.Sorted(slices.Values(cfg.PlanThresholds))
	if cfg.Windows == (certorder.Windows{}) {
		cfg.Windows = certorder.DefaultWindows
	}
	if cfg.Poll <= 0 {
		cfg.Poll = time.Second
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	if cfg.PerEndpoint <= 0 {
		cfg.PerEndpoint = DefaultPerEndpoint
	}
	if cfg.PerMember <= 0 {
		cfg.PerMember = DefaultPerMember
	}
	if cfg.Lease <= 0 {
		cfg.Lease = time.Minute
	}
	if cfg.DisableAfter <= 0 {
		cfg.DisableAfter = DefaultDisableAfter
	}
	m := &workerMetrics{
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "certorder_webhook_deliveries_total", Help: "Webhook delivery attempts by outcome (delivered, gone, http_status, timeout, refused, tls, blocked, dns, network, disabled).",
		}, []string{"outcome"}),
		queueAge: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "certorder_webhook_queue_age_seconds", Help: "How late the latest deliveries taken were, in seconds past their due time.",
		}),
		rounds: queue.RoundsCounter("webhooks"),
	}
	if cfg.Metrics != nil {
		cfg.Metrics.MustRegister(m.deliveries, m.queueAge, m.rounds)
	}
	return &Worker{cfg: cfg, metrics: m, byEndpoint: map[int64]int{}, byMember: map[int64]int{},
		served: map[int64]servedAt{}, freed: make(chan struct{}, 1)}
}

// Run works until ctx ends. A delivery in flight then is abandoned: its
// lease runs out and it is sent again, by this instance after a restart or
// by another. Deliveries are taken as places come free, not only on Poll.
func (w *Worker) Run(ctx context.Context) {
	defer w.running.Wait()
	t := time.NewTicker(w.cfg.Poll)
	defer t.Stop()
	for {
		if err := w.tick(ctx); err != nil && ctx.Err() == nil {
			w.cfg.Logger.Error("webhooks", "err", err)
		}
		w.metrics.rounds.Inc()
		for again := true; again; {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				again = false
			case <-w.freed:
				if err := w.dispatch(ctx); err != nil && ctx.Err() == nil {
					w.cfg.Logger.Error("webhooks", "err", err)
				}
			}
		}
	}
}

// Tick does one round of the work: fan out, expiring orders (hourly),
// deliveries due, pruning (daily); it returns once every delivery due has
// been attempted.
func (w *Worker) Tick(ctx context.Context) error {
	err := w.tick(ctx)
	w.running.Wait()
	for err == nil && ctx.Err() == nil {
		n, derr := w.dispatchN(ctx)
		w.running.Wait()
		if derr != nil || n == 0 {
			return derr
		}
	}
	return err
}

func (w *Worker) tick(ctx context.Context) error {
	now := w.cfg.Now()
	var errs []error
	for {
		n, err := w.cfg.Store.FanOut(ctx, batch, func(ev certorder.Event, ep certorder.Endpoint) (queue.Job, error) {
			msgID, body, err := w.build(ctx, ev, ep.Format)
			return NewDelivery(ep, ev.Type, msgID, body), err
		})
		if err != nil {
			errs = append(errs, err)
		}
		if err != nil || n < batch {
			break
		}
	}
	if now.Sub(w.expiringScanned) >= expiringEvery {
		err := errors.Join(w.ending(ctx, now, certorder.EventOrderExpiring, w.cfg.Thresholds),
			w.ending(ctx, now, certorder.EventOrderPlanEnding, w.cfg.PlanThresholds))
		if err != nil {
			errs = append(errs, err)
		} else {
			w.expiringScanned = now
		}
	}
	if err := w.dispatch(ctx); err != nil {
		errs = append(errs, err)
	}
	if now.Sub(w.pruned) >= pruneEvery {
		if err := errors.Join(w.cfg.Store.PruneJobs(ctx, []string{queue.KindWebhook}, now.Add(-keepFinished)),
			w.cfg.Store.PruneEvents(ctx, now.Add(-keepFinished))); err != nil {
			errs = append(errs, err)
		} else {
			w.pruned = now
		}
	}
	return errors.Join(errs...)
}

// build makes the message of an event in an endpoint's format: its ID and
// its body, once. A chat room's line says the order as it is now.
func (w *Worker) build(ctx context.Context, ev certorder.Event, format string) (string, []byte, error) {
	if format == certorder.FormatSlack {
		told := notice.Told{Event: ev, Now: w.cfg.Now()}
		if w.cfg.Orders != nil {
			o, err := w.cfg.Orders.FindOrder(ctx, notice.OrderID(ev))
			if err != nil && !errors.Is(err, certorder.ErrNotFound) {
				return "", nil, err
			}
			if o != nil && o.MemberID == ev.MemberID {
				told.Order = o
			}
		}
		return NewMessageID(), ChatBody(w.cfg.Texts.ChatLine(told)), nil
	}
	body, err := json.Marshal(Event{Type: ev.Type, Timestamp: ev.At, Data: ev.Data})
	return NewMessageID(), body, err
}

func (w *Worker) dispatch(ctx context.Context) error {
	_, err := w.dispatchN(ctx)
	return err
}

// dispatchN claims deliveries for the free places and starts them, without
// waiting for them; it returns how many it started.
func (w *Worker) dispatchN(ctx context.Context) (int, error) {
	started := 0
	for ctx.Err() == nil {
		now := w.cfg.Now()
		w.mu.Lock()
		free := w.cfg.Concurrency - w.inFlight
		var skipE, skipM []int64
		for id, n := range w.byEndpoint {
			if n >= w.cfg.PerEndpoint {
				skipE = append(skipE, id)
			}
		}
		for id, n := range w.byMember {
			if n >= w.cfg.PerMember {
				skipM = append(skipM, id)
			}
		}
		order := w.servedOrder(now)
		w.mu.Unlock()
		if free <= 0 {
			return started, nil
		}
		jobs, err := w.cfg.Store.ClaimJobs(ctx, queue.Claim{Kinds: []string{queue.KindWebhook}, Owner: w.cfg.Owner,
			At: now, Lease: w.cfg.Lease, Limit: free, RoundRobin: true, SkipSubjects: skipE, SkipMembers: skipM, Served: order})
		if err != nil {
			return started, err
		}
		if len(jobs) == 0 {
			return started, nil
		}
		for _, j := range jobs {
			d, err := DeliveryOf(j)
			if err != nil {
				// Nothing can send it: failed for good, said in the log.
				w.cfg.Logger.Error("webhooks", "err", err)
				err = w.cfg.Store.FinishJob(ctx, queue.Outcome{JobID: j.ID, Owner: w.cfg.Owner, At: now, State: queue.Failed,
					Error: "the delivery could not be read"})
				if err != nil {
					return started, err
				}
				continue
			}
			w.start(ctx, d, now.Add(w.cfg.Lease))
			started++
		}
	}
	return started, nil
}

// servedOrder lists the members served lately, in the order a claim is to
// take them after every other member: fewest deliveries in flight first,
// then the one served longest ago. It forgets the members with nothing in
// flight served more than servedMemory ago. Called with w.mu held.
func (w *Worker) servedOrder(now time.Time) []int64 {
	order := make([]int64, 0, len(w.served))
	for id, s := range w.served {
		if w.byMember[id] == 0 && now.Sub(s.at) > servedMemory {
			delete(w.served, id)
			continue
		}
		order = append(order, id)
	}
	slices.SortFunc(order, func(a, b int64) int {
		return cmp.Or(cmp.Compare(w.byMember[a], w.byMember[b]), cmp.Compare(w.served[a].seq, w.served[b].seq))
	})
	return order
}
