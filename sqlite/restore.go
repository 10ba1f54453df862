package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"iter"
	"strings"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/export"
	"github.com/certorder/certorder/internal/storekit"
)

// Restore loads an export into the empty store, in one transaction.
func (s *Store) Restore(ctx context.Context, records iter.Seq2[storekit.Record, error]) error {
	return s.wrap("restore", s.bulkTx(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM members) + (SELECT COUNT(*) FROM orders)`).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return fmt.Errorf("%w: the store is not empty", certorder.ErrConflict)
		}
		insert, err := tx.PrepareContext(ctx, multiRow(insertOrder, upsertBatchRows))
		if err != nil {
			return err
		}
		defer insert.Close()
		stamp := now()
		history := &historyTx{tx: tx}
		defer history.close()
		// Orders are written upsertBatchRows at a time, in one statement,
		// and their histories with them.
		var rows []any
		var entries []certorder.CertificateEntry
		flush := func() error {
			if len(rows) == 0 {
				return nil
			}
			stmt := insert
			if n := len(rows) / orderFields; n != upsertBatchRows {
				if stmt, err = tx.PrepareContext(ctx, multiRow(insertOrder, n)); err != nil {
					return err
				}
				defer stmt.Close()
			}
			if _, err := stmt.ExecContext(ctx, rows...); err != nil {
				return err
			}
			rows = rows[:0]
			err := history.SaveCertificates(ctx, entries)
			entries = entries[:0]
			return err
		}
		err = export.Restorer{
			Member: func(m *certorder.Member) (int64, error) {
				res, err := tx.ExecContext(ctx, `INSERT INTO members (name, disabled, created_at, self_service_keys_off) VALUES (?, ?, ?, ?)`,
					m.Name, m.Disabled, stampOrNow(m.CreatedAt), m.SelfServiceKeysOff)
				if err != nil {
					return 0, err
				}
				return res.LastInsertId()
			},
			Key: func(k *certorder.Key, memberID int64) error {
				revoked := sql.NullString{String: formatTime(k.RevokedAt), Valid: k.Revoked()}
				_, err := tx.ExecContext(ctx, `INSERT INTO api_keys (id, member_id, label, hash, created_at, revoked_at)
					VALUES (?, ?, ?, ?, ?, ?)`, k.ID, memberID, k.Label, k.Hash, stampOrNow(k.CreatedAt), revoked)
				return err
			},
			Link: func(l *certorder.ContainerLink, memberID int64) error {
				_, err := tx.ExecContext(ctx, `INSERT INTO container_links (container_id, member_id, created_at) VALUES (?, ?, ?)`,
					l.Container, memberID, stampOrNow(l.CreatedAt))
				return err
			},
			Endpoint: func(e *certorder.Endpoint, memberID int64) error {
				expires := sql.NullString{String: formatTime(e.PreviousExpires), Valid: !e.PreviousExpires.IsZero()}
				_, err := tx.ExecContext(ctx, `INSERT INTO webhook_endpoints (member_id, url, format, event_types, secret, previous_secret,
					previous_expires, enabled, disabled_reason, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
					memberID, e.URL, certorder.EndpointFormat(e.Format), strings.Join(e.EventTypes, ","), e.Secret, e.PreviousSecret,
					expires, e.Enabled, e.DisabledReason, stampOrNow(e.CreatedAt))
				return err
			},
			Notice: func(a *certorder.NoticeAddress, memberID int64) error {
				_, err := tx.ExecContext(ctx, `INSERT INTO notice_addresses (member_id, address, lang, event_types, secret,
					created_at, confirmed_at, unsubscribed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
					memberID, a.Address, a.Lang, strings.Join(a.EventTypes, ","), a.Secret, stampOrNow(a.CreatedAt),
					nullTime(a.ConfirmedAt), nullTime(a.UnsubscribedAt))
				return err
			},
			Order: func(o *certorder.Order, memberID int64, certs []certorder.Certificate) error {
				for _, c := range certs {
					entries = append(entries, certorder.CertificateEntry{OrderID: o.ID, Certificate: c})
				}
				if rows = append(rows, orderRow(o, memberID, o.RenewedBy, stamp)...); len(rows) < upsertBatchRows*orderFields {
					return nil
				}
				return flush()
			},
		}.Run(records)
		if err != nil {
			return err
		}
		return flush()
	}))
}

func stampOrNow(t time.Time) string {
	if t.IsZero() {
		return now()
	}
	return formatTime(t)
}
