package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/credcache"
	"github.com/certorder/certorder/internal/storekit"
)

// The cache's timing. An instance beats every heartbeatEvery on its
// notification connection; an operation on it that takes longer than
// opTimeout ends the connection; an instance that has had no successful
// beat for fence stops using its cache (it fences itself: a connection
// that died silently cannot leave it answering from stale entries); and
// AwaitInstances counts as live the instances seen within liveWindow.
// liveWindow > opTimeout + fence, so an instance no longer counted as live
// has stopped using its cache (see docs/OPERATIONS.md).
const (
	heartbeatEvery = time.Second
	opTimeout      = 2 * time.Second
	fence          = 4 * time.Second
	liveWindow     = 10 * time.Second
	forgetAfter    = time.Hour // rows of instances silent this long are deleted
)

// listenerName begins the application_name of the notification connection,
// as pg_stat_activity shows it; the instance's ID follows.
const listenerName = "certorder cache listener"

// cache is the listener that keeps a cache in front of the store exact
// (credcache.Source): every committed change to members, keys or orders
// notifies (a trigger, migration 0008_perf), and each notification moves the
// cache to a new generation; while the listening connection is down, the
// cache is not used at all.
type cache struct {
	s      *Store
	id     string // this instance's row in cache_instances
	name   string // how operators know it
	logger *slog.Logger

	// state is the generation << 1, with the low bit set while the
	// listener is up; only the listener goroutine writes it.
	state    atomic.Uint64
	start    time.Time    // for monotonic readings of lastBeat
	lastBeat atomic.Int64 // time since start of the last successful contact, in ns
	epoch    int64        // listening sessions so far (listener goroutine only)

	cancel context.CancelFunc
	done   chan struct{}
}

var (
	_ credcache.Sourcer        = (*Store)(nil)
	_ storekit.InstanceAwaiter = (*Store)(nil)
)

// generation is the cache's generation, or false when the cache must not
// be used: the listener is down, or has not been in touch for fence.
func (c *cache) generation() (uint64, bool) {
	st := c.state.Load()
	if st&1 == 0 || time.Since(c.start)-time.Duration(c.lastBeat.Load()) > fence {
		return 0, false
	}
	return st >> 1, true
}

func (c *cache) beat() { c.lastBeat.Store(int64(time.Since(c.start))) }

// up moves to a new generation, listening; down to a new one, not.
func (c *cache) up()   { c.state.Store((c.state.Load()>>1+1)<<1 | 1) }
func (c *cache) down() { c.state.Store((c.state.Load()>>1 + 1) << 1) }
func (c *cache) bump() { c.state.Add(2) }

// CacheSource starts what keeps a cache in front of the store exact: it
// registers the instance, opens a connection that listens for changes, and
// returns once it listens (or fails to). Should that connection drop, the
// cache is bypassed until it is back.
func (s *Store) CacheSource(ctx context.Context, cfg credcache.SourceConfig) (credcache.Source, error) {
	if s.cache.Load() != nil {
		return nil, errors.New("postgres: the cache is on already")
	}
	var b [8]byte
	rand.Read(b[:])
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	name := cfg.Instance
	if name == "" {
		name = "certorder"
	}
	c := &cache{s: s, id: hex.EncodeToString(b[:]), name: name, logger: logger, start: time.Now(), done: make(chan struct{})}
	conn, err := s.listen(ctx, c)
	if err != nil {
		return nil, s.wrap("start cache", err)
	}
	if !s.cache.CompareAndSwap(nil, c) {
		conn.Close(context.Background())
		return nil, errors.New("postgres: the cache is on already")
	}
	runCtx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	go s.runListener(runCtx, c, conn)
	return c, nil
}

// stopCache stops the listener and deletes the instance's row.
func (s *Store) stopCache() {
	c := s.cache.Swap(nil)
	if c == nil {
		return
	}
	c.cancel()
	<-c.done
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	s.pool.Exec(ctx, `DELETE FROM cache_instances WHERE id = $1`, c.id) // best effort: else it ages out
}

// listen connects, listens on the schema's channel, records the instance
// as listening in a new epoch and moves the cache up to a new generation.
// The order matters: the row says listening only once notifications are
// received, and the cache is used only once the row says so (see
// AwaitInstances).
func (s *Store) listen(ctx context.Context, c *cache) (*pgx.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	cc := s.cfg.ConnConfig.Copy()
	cc.RuntimeParams["application_name"] = listenerName + " " + c.id
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return nil, err
	}
	// Without a working LISTEN the cache would never hear of a change
	// (a hot standby, a pooler in transaction mode refuse it): every error
	// here ends the attempt, and CacheSource then leaves the cache off.
	var channel string
	err = conn.QueryRow(ctx, `SELECT 'certorder_' || md5(current_schema())`).Scan(&channel)
	if err == nil {
		_, err = conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize())
	}
	if err == nil {
		c.epoch++
		// Every token taken so far counts as applied: the new generation
		// below reads everything afresh, after the changes it confirms.
		_, err = conn.Exec(ctx, `INSERT INTO cache_instances (id, name, started_at, seen_at, listening, epoch, applied)
			SELECT $1, $2, now(), now(), true, $3, CASE WHEN is_called THEN last_value ELSE 0 END FROM cache_confirmations
			ON CONFLICT (id) DO UPDATE SET seen_at = now(), listening = true, epoch = excluded.epoch,
				applied = GREATEST(cache_instances.applied, excluded.applied)`, c.id, c.name, c.epoch)
	}
	if err != nil {
		conn.Close(context.Background())
		return nil, err
	}
	c.beat()
	c.up()
	return conn, nil
}

// runListener applies notifications and beats until ctx ends; when the
// connection fails it bypasses the cache, says so in the instance's row,
// and reconnects, backing off up to 5 seconds.
func (s *Store) runListener(ctx context.Context, c *cache, conn *pgx.Conn) {
	defer close(c.done)
	backoff := 100 * time.Millisecond
	for {
		if conn != nil {
			err := s.serveNotifications(ctx, c, conn)
			c.down()
			conn.Close(context.Background())
			conn = nil
			if ctx.Err() != nil {
				return
			}
			c.logger.Warn("cache: the notification connection failed; reading everything from the database until it is back",
				"err", s.wrap("listen", err))
			s.markNotListening(c)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		var err error
		if conn, err = s.listen(ctx, c); err != nil {
			backoff = min(2*backoff, 5*time.Second)
			s.markNotListening(c)
			continue
		}
		backoff = 100 * time.Millisecond
		c.logger.Info("cache: listening for changes again")
	}
}

// markNotListening records that the instance reads everything from the
// database, for AwaitInstances. Only the row of the epoch that ended is
// changed: should this write land after the next session has begun, it
// changes nothing.
func (s *Store) markNotListening(c *cache) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	s.pool.Exec(ctx, `UPDATE cache_instances SET listening = false, seen_at = now() WHERE id = $1 AND epoch = $2`, c.id, c.epoch)
}

// serveNotifications handles notifications as they come, in commit order:
// a change moves the cache to a new generation; a confirmation token is
// recorded once every change before it has been applied, which the order
// guarantees. Between them, a beat every heartbeatEvery.
func (s *Store) serveNotifications(ctx context.Context, c *cache, conn *pgx.Conn) error {
	next := time.Now().Add(heartbeatEvery)
	beats := 0
	for {
		wctx, cancel := context.WithDeadline(ctx, next)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		switch {
		case err == nil:
			if token, ok := strings.CutPrefix(n.Payload, "confirm:"); ok {
				if err := s.confirm(ctx, c, conn, token); err != nil {
					return err
				}
			} else {
				c.bump()
			}
			continue
		case ctx.Err() != nil:
			return ctx.Err()
		case !pgconn.Timeout(err) && !errors.Is(err, context.DeadlineExceeded):
			return err
		}
		octx, cancel := context.WithTimeout(ctx, opTimeout)
		_, err = conn.Exec(octx, `UPDATE cache_instances SET seen_at = now() WHERE id = $1`, c.id)
		if beats++; err == nil && beats%60 == 0 {
			_, err = conn.Exec(octx, `DELETE FROM cache_instances WHERE seen_at < now() - $1 * interval '1 second'`,
				forgetAfter.Seconds())
		}
		cancel()
		if err != nil {
			return err
		}
		c.beat()
		next = time.Now().Add(heartbeatEvery)
	}
}

// confirm records that the instance has applied every change committed
// before confirmation token.
func (s *Store) confirm(ctx context.Context, c *cache, conn *pgx.Conn, token string) error {
	n, err := strconv.ParseInt(token, 10, 64)
	if err != nil {
		return nil // not ours
	}
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	if _, err := conn.Exec(ctx, `UPDATE cache_instances SET applied = GREATEST(applied, $2), seen_at = now() WHERE id = $1`,
		c.id, n); err != nil {
		return err
	}
	c.beat()
	return nil
}

// AwaitInstances returns once every live instance (seen within
// liveWindow) has applied every change committed before the call, or has
// its cache off; when ctx ends first, it names those that have not.
//
// It takes the next confirmation token and notifies it on the channel the
// changes use: an instance receives notifications in commit order, so once
// it records the token, it has applied every change before it. Tokens are
// taken in order, so a higher one recorded covers a lower one.
func (s *Store) AwaitInstances(ctx context.Context) ([]string, error) {
	var token int64
	if err := s.pool.QueryRow(ctx, `SELECT n, pg_notify('certorder_' || md5(current_schema()), 'confirm:' || n)
		FROM (SELECT nextval('cache_confirmations') AS n) t`).Scan(&token, nil); err != nil {
		return nil, s.wrap("await instances", err)
	}
	for wait := 5 * time.Millisecond; ; wait = min(2*wait, 100*time.Millisecond) {
		var names []string
		err := func() error {
			qctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), opTimeout)
			defer cancel()
			rows, _ := s.pool.Query(qctx, `SELECT name FROM cache_instances
				WHERE listening AND applied < $1 AND seen_at > now() - $2 * interval '1 second' ORDER BY name`,
				token, liveWindow.Seconds())
			var err error
			names, err = pgx.CollectRows(rows, pgx.RowTo[string])
			return err
		}()
		if err != nil {
			return nil, s.wrap("await instances", err)
		}
		if len(names) == 0 {
			return nil, nil
		}
		select {
		case <-ctx.Done():
			return names, nil
		case <-time.After(wait):
		}
	}
}

// Generation is the cache's generation, or false when it must not be used.
func (c *cache) Generation() (uint64, bool) { return c.generation() }

// MemberOrder reads the credential's member's order orderID; nil if the
// member has none (another member's is never read).
func (c *cache) MemberOrder(ctx context.Context, cred certorder.Credential, orderID int64) (*certorder.Order, error) {
	return c.s.readMemberOrder(ctx, cred, orderID)
}

func (s *Store) readMemberOrder(ctx context.Context, cred certorder.Credential, orderID int64) (*certorder.Order, error) {
	var n storekit.OrderRow
	err := s.read(ctx, func() error {
		n = storekit.OrderRow{} // nothing of a first attempt cut short
		return s.pool.QueryRow(ctx, `SELECT `+storekit.OrderColumns+` FROM orders o WHERE o.id = $1 AND o.member_id = $2`,
			orderID, cred.MemberID).Scan(n.Dest()...)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, s.wrap("find order", err)
	}
	o, err := n.MemberOrder(&cred)
	return o, s.wrap("find order", err)
}

// String names the instance, for logs.
func (c *cache) String() string { return fmt.Sprintf("%s (%s)", c.name, c.id) }
