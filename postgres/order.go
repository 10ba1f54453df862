package postgres

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/storekit"
)

// FindOrder returns one order.
func (s *Store) FindOrder(ctx context.Context, id int64) (*certorder.Order, error) {
	var n storekit.OrderRow
	var l storekit.Lifecycle
	var member string
	err := s.pool.QueryRow(ctx, `SELECT `+storekit.OrderColumns+`, `+storekit.LifecycleColumns+`, m.name FROM orders o
		JOIN members m ON m.id = o.member_id`+storekit.LifecycleJoin+` WHERE o.id = $1`, id).Scan(append(append(n.Dest(), l.Dest()...), &member)...)
	if errors.Is(err, pgx.ErrNoRows) {
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
func linkLookup(tx pgx.Tx) func(context.Context, int64) (certorder.OrderLink, error) {
	return func(ctx context.Context, id int64) (certorder.OrderLink, error) {
		var l certorder.OrderLink
		err := tx.QueryRow(ctx, `SELECT member_id, COALESCE(renewed_by, 0), status FROM orders WHERE id = $1`, id).
			Scan(&l.MemberID, &l.RenewedBy, &l.Status)
		if errors.Is(err, pgx.ErrNoRows) {
			return l, fmt.Errorf("%w: order %d", certorder.ErrNotFound, id)
		}
		return l, err
	}
}

// RecordRenewal records that newID renewed oldID. Both must be stored.
func (s *Store) RecordRenewal(ctx context.Context, oldID, newID int64) error {
	return s.wrap("record renewal", s.inTx(ctx, func(tx pgx.Tx) error {
		if err := lockTx(ctx, tx, lockRenewals); err != nil {
			return err
		}
		changed, err := certorder.CheckRecordRenewal(ctx, oldID, newID, linkLookup(tx))
		if err != nil || !changed {
			return err
		}
		var member int64
		if err := tx.QueryRow(ctx, `UPDATE orders SET renewed_by = $1, updated_at = now() WHERE id = $2 RETURNING member_id`,
			newID, oldID).Scan(&member); err != nil {
			return err
		}
		return addEvents(ctx, tx, certorder.OrderChange{OrderID: oldID, MemberID: member, RenewedBy: newID}.Events(time.Now()))
	}))
}

// insertOrder writes an order row; upsertOrder replaces one.
const insertOrder = `INSERT INTO orders
	(id, member_id, common_name, status, valid_from, valid_till, plan_till, renewed_by, doc, cert_end, doc_format, names, updated_at,
	serial_key, thumbprint_key)
	VALUES ($1, $2, $3, $4, $5, $6, $7, NULLIF($8::BIGINT, 0), $9, $10, $11, $12, now(), $13, $14)`

const upsertOrder = insertOrder + onConflictUpdate

const onConflictUpdate = ` ON CONFLICT (id) DO UPDATE SET
	common_name = excluded.common_name, status = excluded.status, valid_from = excluded.valid_from,
	valid_till = excluded.valid_till, plan_till = excluded.plan_till,
	renewed_by = excluded.renewed_by, doc = excluded.doc, cert_end = excluded.cert_end,
	doc_format = excluded.doc_format, names = excluded.names, updated_at = excluded.updated_at,
	serial_key = excluded.serial_key, thumbprint_key = excluded.thumbprint_key`

func orderRow(o *certorder.Order, memberID, renewedBy int64) []any {
	c := &o.Certificate
	serial, thumbprint := c.Keys()
	return []any{o.ID, memberID, c.CommonName, o.Status, c.ValidFrom, c.ValidTill, o.PlanTill, renewedBy, o.Doc, o.CertEnd,
		certorder.DocFormat, o.SearchText(), serial, thumbprint}
}

// orderTx checks and writes orders inside one transaction, which holds the
// renewals lock. ImportOrders and the sync (sync.go) both write through
// it: an order is stored in one place.
type orderTx struct {
	historyTx
	tx  pgx.Tx
	buf []byte // SaveOrders' parameters
}

// newOrderTx takes the renewals lock, so that two writers cannot build a
// renewal cycle between them.
func newOrderTx(ctx context.Context, tx pgx.Tx) (*orderTx, error) {
	if err := lockTx(ctx, tx, lockRenewals); err != nil {
		return nil, err
	}
	return &orderTx{tx: tx, historyTx: historyTx{tx}}, nil
}

// Link reads an order's owner and renewal, for certorder.CheckRenewal.
func (t *orderTx) Link(ctx context.Context, id int64) (certorder.OrderLink, error) {
	return linkLookup(t.tx)(ctx, id)
}

// RenewedFromOther returns an order of another member renewed by id, 0 if none.
func (t *orderTx) RenewedFromOther(ctx context.Context, id, memberID int64) (int64, error) {
	var other int64
	err := t.tx.QueryRow(ctx, `SELECT id FROM orders WHERE renewed_by = $1 AND member_id <> $2 ORDER BY id LIMIT 1`,
		id, memberID).Scan(&other)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return other, err
}

// save writes a checked order (see certorder.CheckImport).
func (t *orderTx) save(ctx context.Context, memberID int64, o *certorder.Order, renewedBy int64) error {
	_, err := t.tx.Exec(ctx, upsertOrder, orderRow(o, memberID, renewedBy)...)
	return err
}

// ImportOrders stores orders for a member, all or none, in batches
// (storekit.ImportInBatches: the rules of CheckImport, three statements a
// thousand orders).
func (s *Store) ImportOrders(ctx context.Context, member string, orders iter.Seq2[*certorder.Order, error]) (int, error) {
	n := 0
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		ot, err := newOrderTx(ctx, tx)
		if err != nil {
			return err
		}
		mid, err := storekit.MemberID(ctx, pgDB{tx}, member)
		if err != nil {
			return err
		}
		n, err = storekit.ImportInBatches(ctx, mid, orders, ot)
		return err
	})
	if err != nil {
		return 0, s.wrap("import orders", err)
	}
	return n, nil
}

var _ storekit.BatchWriter = (*orderTx)(nil)

// Links reads the owner, renewal and status of those of ids that are stored.
func (t *orderTx) Links(ctx context.Context, ids []int64) (map[int64]certorder.OrderLink, error) {
	rows, _ := t.tx.Query(ctx, `SELECT id, member_id, COALESCE(renewed_by, 0), status FROM orders WHERE id = ANY($1)`, ids)
	links := make(map[int64]certorder.OrderLink, len(ids))
	var id int64
	var l certorder.OrderLink
	_, err := pgx.ForEachRow(rows, []any{&id, &l.MemberID, &l.RenewedBy, &l.Status}, func() error {
		links[id] = l
		return nil
	})
	return links, err
}

// RenewedFromOthers returns, for those of ids an order of another member
// names as its renewal, the lowest such order.
func (t *orderTx) RenewedFromOthers(ctx context.Context, ids []int64, memberID int64) (map[int64]int64, error) {
	rows, _ := t.tx.Query(ctx, `SELECT renewed_by, MIN(id) FROM orders WHERE renewed_by = ANY($1) AND member_id <> $2
		GROUP BY renewed_by`, ids, memberID)
	from := map[int64]int64{}
	var id, other int64
	_, err := pgx.ForEachRow(rows, []any{&id, &other}, func() error {
		from[id] = other
		return nil
	})
	return from, err
}

// saveOrders is SaveOrders' statement: the orders' columns as arrays, and
// in the same statement the new entries of their histories.
const saveOrders = `WITH saved AS (INSERT INTO orders
	(id, member_id, common_name, status, valid_from, valid_till, plan_till, renewed_by, doc, cert_end, doc_format, names, updated_at,
	serial_key, thumbprint_key)
	SELECT id, $2::BIGINT, cn, st, vf, vt, pt, NULLIF(rb, 0), doc, ce, $3::INTEGER, nm, now(), sk, tk
	FROM unnest($1::BIGINT[], $4::TEXT[], $5::TEXT[], $6::TEXT[], $7::BIGINT[], $8::BYTEA[], $9::INTEGER[], $10::TEXT[],
		$11::TEXT[], $12::TEXT[], $25::TEXT[], $26::TEXT[])
		AS t(id, cn, st, vt, rb, doc, ce, nm, vf, pt, sk, tk)
	` + onConflictUpdate + `)
	INSERT INTO order_certificates (order_id, cert_id, serial_number, thumbprint, common_name, dns_names, status,
		date_issued, valid_from, valid_till, serial_key, thumbprint_key, recorded_at, member_id)
	SELECT oid, cid, sn, tp, cn, dn, st, di, vf, vt, sk, tk, now(), $2::BIGINT
	FROM unnest($13::BIGINT[], $14::BIGINT[], $15::TEXT[], $16::TEXT[], $17::TEXT[], $18::TEXT[], $19::TEXT[], $20::TEXT[],
		$21::TEXT[], $22::TEXT[], $23::TEXT[], $24::TEXT[])
		AS h(oid, cid, sn, tp, cn, dn, st, di, vf, vt, sk, tk)`

// saveOrdersOIDs are the types of saveOrders' parameters.
var saveOrdersOIDs = []uint32{pgtype.Int8ArrayOID, pgtype.Int8OID, pgtype.Int4OID, pgtype.TextArrayOID, pgtype.TextArrayOID,
	pgtype.TextArrayOID, pgtype.Int8ArrayOID, pgtype.ByteaArrayOID, pgtype.Int4ArrayOID, pgtype.TextArrayOID,
	pgtype.TextArrayOID, pgtype.TextArrayOID,
	pgtype.Int8ArrayOID, pgtype.Int8ArrayOID, pgtype.TextArrayOID, pgtype.TextArrayOID, pgtype.TextArrayOID, pgtype.TextArrayOID,
	pgtype.TextArrayOID, pgtype.TextArrayOID, pgtype.TextArrayOID, pgtype.TextArrayOID, pgtype.TextArrayOID, pgtype.TextArrayOID,
	pgtype.TextArrayOID, pgtype.TextArrayOID}

// SaveOrders writes checked orders and the entries their histories add in
// one statement, their columns as arrays. The
// parameters are encoded (by pgx's type map) into a buffer the
// transaction keeps: pgx's Exec encodes them into a buffer that it shrinks
// back to 256 bytes after every statement, and growing it again to the
// 1.3 MB of a thousand documents took 5.7 ms a batch against 0.3 ms
// (about 1.1 s of CPU for 200,000 orders, of the client's 11).
func (t *orderTx) SaveOrders(ctx context.Context, memberID int64, orders []storekit.CheckedOrder, history []certorder.CertificateEntry) error {
	n := len(orders)
	ids, renewed := make([]int64, n), make([]int64, n)
	names, statuses, validTill, search := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	validFrom, planTill, serialKeys, thumbprintKeys := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	docs, certEnds := make([][]byte, n), make([]int32, n)
	for i, c := range orders {
		o := c.Order
		ids[i], renewed[i], docs[i], certEnds[i] = o.ID, c.RenewedBy, o.Doc, int32(o.CertEnd)
		names[i], statuses[i], validTill[i], search[i] = o.Certificate.CommonName, o.Status, o.Certificate.ValidTill, o.SearchText()
		validFrom[i], planTill[i] = o.Certificate.ValidFrom, o.PlanTill
		serialKeys[i], thumbprintKeys[i] = o.Certificate.Keys()
	}
	var added historyArrays
	for _, e := range history {
		if err := added.add(e); err != nil {
			return err
		}
	}
	conn := t.tx.Conn()
	sd, err := conn.Prepare(ctx, saveOrders, saveOrders) // once a connection
	if err != nil {
		return err
	}
	args := []any{ids, memberID, int32(certorder.DocFormat), names, statuses, validTill, renewed, docs, certEnds, search,
		validFrom, planTill}
	args = append(append(args, added.columns()...), serialKeys, thumbprintKeys)
	t.buf = t.buf[:0]
	ends := make([]int, len(args))
	for i, a := range args {
		if t.buf, err = conn.TypeMap().Encode(saveOrdersOIDs[i], pgtype.BinaryFormatCode, a, t.buf); err != nil {
			return err
		}
		ends[i] = len(t.buf)
	}
	values, start := make([][]byte, len(args)), 0
	for i, end := range ends {
		values[i], start = t.buf[start:end], end
	}
	_, err = conn.PgConn().ExecPrepared(ctx, sd.Name, values, []int16{pgtype.BinaryFormatCode}, nil).Close()
	return err
}

// AddEvents writes events to the outbox in the import's or the sync's
// transaction (storekit.EventWriter).
func (t *orderTx) AddEvents(ctx context.Context, events []certorder.Event) error {
	return addEvents(ctx, t.tx, events)
}
