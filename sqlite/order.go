package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/storekit"
)

// FindOrder returns one order.
func (s *Store) FindOrder(ctx context.Context, id int64) (*certorder.Order, error) {
	var n storekit.OrderRow
	var l storekit.Lifecycle
	var member string
	err := s.findOrder.QueryRowContext(ctx, id).Scan(append(append(n.Dest(), l.Dest()...), &member)...)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: order %d", certorder.ErrNotFound, id)
	}
	if err != nil {
		return nil, s.wrap("find order", err)
	}
	o, err := n.Order()
	if o != nil {
		o.Member = member
		l.Fill(o)
	}
	return o, s.wrap("find order", err)
}

// linkLookup reads an order's owner and renewal inside tx, for certorder.CheckRenewal.
func linkLookup(stmt *sql.Stmt) func(context.Context, int64) (certorder.OrderLink, error) {
	return func(ctx context.Context, id int64) (certorder.OrderLink, error) {
		var l certorder.OrderLink
		err := stmt.QueryRowContext(ctx, id).Scan(&l.MemberID, &l.RenewedBy, &l.Status)
		if errors.Is(err, sql.ErrNoRows) {
			return l, fmt.Errorf("%w: order %d", certorder.ErrNotFound, id)
		}
		return l, err
	}
}

const selectLink = `SELECT member_id, COALESCE(renewed_by, 0), status FROM orders WHERE id = ?`

// RecordRenewal records that newID renewed oldID. Both must be stored.
func (s *Store) RecordRenewal(ctx context.Context, oldID, newID int64) error {
	return s.wrap("record renewal", inTx(ctx, s.write, func(tx *sql.Tx) error {
		stmt, err := tx.PrepareContext(ctx, selectLink)
		if err != nil {
			return err
		}
		defer stmt.Close()
		changed, err := certorder.CheckRecordRenewal(ctx, oldID, newID, linkLookup(stmt))
		if err != nil || !changed {
			return err
		}
		var member int64
		if err := tx.QueryRowContext(ctx, `UPDATE orders SET renewed_by = ?, updated_at = ? WHERE id = ? RETURNING member_id`,
			newID, now(), oldID).Scan(&member); err != nil {
			return err
		}
		return addEvents(ctx, tx, certorder.OrderChange{OrderID: oldID, MemberID: member, RenewedBy: newID}.Events(time.Now()))
	}))
}

// insertOrder writes an order row; upsertOrder replaces one.
const insertOrder = `INSERT INTO orders
	(id, member_id, common_name, status, valid_from, valid_till, plan_till, renewed_by, doc, cert_end, doc_format, names, updated_at,
	serial_key, thumbprint_key)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

const upsertOrder = insertOrder + ` ON CONFLICT (id) DO UPDATE SET
	common_name = excluded.common_name, status = excluded.status, valid_from = excluded.valid_from,
	valid_till = excluded.valid_till, plan_till = excluded.plan_till,
	renewed_by = excluded.renewed_by, doc = excluded.doc, cert_end = excluded.cert_end,
	doc_format = excluded.doc_format, names = excluded.names, updated_at = excluded.updated_at,
	serial_key = excluded.serial_key, thumbprint_key = excluded.thumbprint_key`

// orderRow is the values of insertOrder for o, its document compressed
// (storekit.PackDoc). PostgreSQL reads compressed documents but writes
// them plain, for now: docs/OPERATIONS.md says why.
func orderRow(o *certorder.Order, memberID, renewedBy int64, stamp string) []any {
	c := &o.Certificate
	serial, thumbprint := c.Keys()
	doc, format := storekit.PackDoc(o.Doc)
	return []any{o.ID, memberID, c.CommonName, o.Status, c.ValidFrom, c.ValidTill, o.PlanTill,
		sql.NullInt64{Int64: renewedBy, Valid: renewedBy != 0}, doc, o.CertEnd, format, o.SearchText(), stamp,
		serial, thumbprint}
}

// orderTx checks and writes orders inside one transaction. ImportOrders
// and the sync (sync.go) both write through it: an order is stored in one
// place.
type orderTx struct {
	historyTx
	tx                                   *sql.Tx
	link, fromOther, upsert, upsertBatch *sql.Stmt
	links, fromOthers                    *sql.Stmt // prepared by their first use
	stamp                                string
}

func newOrderTx(ctx context.Context, tx *sql.Tx) (*orderTx, error) {
	t := &orderTx{tx: tx, historyTx: historyTx{tx: tx}, stamp: now()}
	var err error
	if t.link, err = tx.PrepareContext(ctx, selectLink); err != nil {
		return nil, err
	}
	if t.fromOther, err = tx.PrepareContext(ctx,
		`SELECT id FROM orders WHERE renewed_by = ? AND member_id <> ? ORDER BY id LIMIT 1`); err != nil {
		t.close()
		return nil, err
	}
	if t.upsert, err = tx.PrepareContext(ctx, upsertOrder); err != nil {
		t.close()
		return nil, err
	}
	if t.upsertBatch, err = tx.PrepareContext(ctx, upsertOrders(upsertBatchRows)); err != nil {
		t.close()
		return nil, err
	}
	return t, nil
}

func (t *orderTx) close() {
	t.historyTx.close()
	for _, st := range []*sql.Stmt{t.link, t.fromOther, t.upsert, t.upsertBatch, t.links, t.fromOthers} {
		if st != nil {
			st.Close()
		}
	}
}

// Link reads an order's owner and renewal, for certorder.CheckRenewal.
func (t *orderTx) Link(ctx context.Context, id int64) (certorder.OrderLink, error) {
	return linkLookup(t.link)(ctx, id)
}

// RenewedFromOther returns an order of another member renewed by id, 0 if none.
func (t *orderTx) RenewedFromOther(ctx context.Context, id, memberID int64) (int64, error) {
	var other int64
	err := t.fromOther.QueryRowContext(ctx, id, memberID).Scan(&other)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return other, err
}

// save writes a checked order (see certorder.CheckImport).
func (t *orderTx) save(ctx context.Context, memberID int64, o *certorder.Order, renewedBy int64) error {
	_, err := t.upsert.ExecContext(ctx, orderRow(o, memberID, renewedBy, t.stamp)...)
	return err
}

// ImportOrders stores orders for a member, all or none, in batches
// (storekit.ImportInBatches: the rules of CheckImport, a few statements a
// thousand orders).
func (s *Store) ImportOrders(ctx context.Context, member string, orders iter.Seq2[*certorder.Order, error]) (int, error) {
	n := 0
	err := s.bulkTx(ctx, func(tx *sql.Tx) error {
		mid, err := storekit.MemberID(ctx, sqlDB{q: tx}, member)
		if err != nil {
			return err
		}
		ot, err := newOrderTx(ctx, tx)
		if err != nil {
			return err
		}
		defer ot.close()
		n, err = storekit.ImportInBatches(ctx, mid, orders, ot)
		return err
	})
	if err != nil {
		return 0, s.wrap("import orders", err)
	}
	return n, nil
}

var _ storekit.BatchWriter = (*orderTx)(nil)

// Links reads the owner, renewal and status of those of ids that are stored. It
// and RenewedFromOthers take the ids as one JSON array (json_each) in a
// statement prepared once: as an IN list of placeholders, each batch's
// statements were prepared anew (importing 200,000 orders, the two took
// 0.75 s of CPU before, 0.53 s after).
func (t *orderTx) Links(ctx context.Context, ids []int64) (map[int64]certorder.OrderLink, error) {
	if t.links == nil {
		var err error
		if t.links, err = t.tx.PrepareContext(ctx, `SELECT id, member_id, COALESCE(renewed_by, 0), status FROM orders
			WHERE id IN (SELECT value FROM json_each(?))`); err != nil {
			return nil, err
		}
	}
	rows, err := t.links.QueryContext(ctx, idsJSON(ids))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	links := make(map[int64]certorder.OrderLink, len(ids))
	for rows.Next() {
		var id int64
		var l certorder.OrderLink
		if err := rows.Scan(&id, &l.MemberID, &l.RenewedBy, &l.Status); err != nil {
			return nil, err
		}
		links[id] = l
	}
	return links, rows.Err()
}

// RenewedFromOthers returns, for those of ids an order of another member
// names as its renewal, the lowest such order.
func (t *orderTx) RenewedFromOthers(ctx context.Context, ids []int64, memberID int64) (map[int64]int64, error) {
	if t.fromOthers == nil {
		var err error
		if t.fromOthers, err = t.tx.PrepareContext(ctx, `SELECT renewed_by, MIN(id) FROM orders
			WHERE renewed_by IN (SELECT value FROM json_each(?)) AND member_id <> ? GROUP BY renewed_by`); err != nil {
			return nil, err
		}
	}
	rows, err := t.fromOthers.QueryContext(ctx, idsJSON(ids), memberID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	from := map[int64]int64{}
	for rows.Next() {
		var id, other int64
		if err := rows.Scan(&id, &other); err != nil {
			return nil, err
		}
		from[id] = other
	}
	return from, rows.Err()
}

// SaveOrders writes checked orders, a multi-row upsert per
// upsertBatchRows of them, then the entries their histories add
// (saveCertificates).
func (t *orderTx) SaveOrders(ctx context.Context, memberID int64, orders []storekit.CheckedOrder, history []certorder.CertificateEntry) error {
	for chunk := range slices.Chunk(orders, upsertBatchRows) {
		stmt := t.upsertBatch
		if len(chunk) != upsertBatchRows {
			var err error
			if stmt, err = t.tx.PrepareContext(ctx, upsertOrders(len(chunk))); err != nil {
				return err
			}
			defer stmt.Close()
		}
		args := make([]any, 0, len(chunk)*orderFields)
		for _, c := range chunk {
			args = append(args, orderRow(c.Order, memberID, c.RenewedBy, t.stamp)...)
		}
		if _, err := stmt.ExecContext(ctx, args...); err != nil {
			return err
		}
	}
	return t.saveCertificates(ctx, history, func(int64) int64 { return memberID })
}

// Bounds of the batch statements: SQLite takes at most 32766 variables.
const (
	orderFields     = 15 // the columns of insertOrder
	upsertBatchRows = 500
)

// upsertOrders is upsertOrder for n rows.
func upsertOrders(n int) string { return multiRow(upsertOrder, n) }

// multiRow is an INSERT statement of one row of values made one of n rows.
func multiRow(stmt string, n int) string {
	i := strings.Index(stmt, "VALUES (") + len("VALUES ")
	j := i + strings.Index(stmt[i:], ")") + 1
	row := stmt[i:j]
	return stmt[:i] + strings.Repeat(row+",", n-1) + row + stmt[j:]
}

// AddEvents writes events to the outbox in the import's or the sync's
// transaction (storekit.EventWriter).
func (t *orderTx) AddEvents(ctx context.Context, events []certorder.Event) error {
	return addEvents(ctx, t.tx, events)
}
