package postgres

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/storekit"
)

// historyColumnNames are the columns a history entry is written to, in the
// order of historyRow.
var historyColumnNames = []string{"order_id", "cert_id", "serial_number", "thumbprint", "common_name", "dns_names",
	"status", "date_issued", "valid_from", "valid_till", "serial_key", "thumbprint_key", "recorded_at", "member_id"}

// historyRow is entry e of the history of an order of member memberID.
func historyRow(e certorder.CertificateEntry, memberID int64, stamp time.Time) ([]any, error) {
	names := e.DNSNames
	if names == nil {
		names = []string{}
	}
	b, err := json.Marshal(names)
	return []any{e.OrderID, e.ID, e.SerialNumber, e.Thumbprint, e.CommonName, string(b), e.Status, e.DateIssued,
		e.ValidFrom, e.ValidTill, certorder.SerialKey(e.SerialNumber), certorder.HexKey(e.Thumbprint), stamp, memberID}, err
}

// historyArrays are new history entries as one array a column, in the
// order of historyColumnNames but recorded_at, for SaveOrders' statement.
type historyArrays struct {
	orderIDs, certIDs []int64
	text              [10][]string // serial_number to thumbprint_key
}

func (h *historyArrays) add(e certorder.CertificateEntry) error {
	row, err := historyRow(e, 0, time.Time{}) // the member and the time are the statement's
	if err != nil {
		return err
	}
	h.orderIDs, h.certIDs = append(h.orderIDs, e.OrderID), append(h.certIDs, e.ID)
	for i := range h.text {
		h.text[i] = append(h.text[i], row[2+i].(string))
	}
	return nil
}

// columns are the arrays, empty rather than nil.
func (h *historyArrays) columns() []any {
	cols := []any{nonNil(h.orderIDs), nonNil(h.certIDs)}
	for _, t := range h.text {
		cols = append(cols, nonNil(t))
	}
	return cols
}

// histories reads the certificate histories of the orders ids, each oldest first.
func histories(ctx context.Context, q querier, ids []int64) (map[int64][]certorder.CertificateEntry, error) {
	rows, _ := q.Query(ctx, `SELECT `+storekit.HistoryColumns+` FROM order_certificates WHERE order_id = ANY($1) ORDER BY order_id, seq`, ids)
	out := map[int64][]certorder.CertificateEntry{}
	var e certorder.CertificateEntry
	var names string
	_, err := pgx.ForEachRow(rows, entryDest(&e, &names), func() error {
		e.DNSNames = nil
		if err := json.Unmarshal([]byte(names), &e.DNSNames); err != nil {
			return err
		}
		out[e.OrderID] = append(out[e.OrderID], e)
		return nil
	})
	return out, err
}

// entryDest is where the columns of a history entry are scanned, in the
// order histories selects them; the DNS names come as JSON text.
func entryDest(e *certorder.CertificateEntry, names *string) []any {
	return []any{&e.OrderID, &e.Seq, &e.ID, &e.SerialNumber, &e.Thumbprint, &e.CommonName, names,
		&e.Status, &e.DateIssued, &e.ValidFrom, &e.ValidTill}
}

// Certificates returns the certificate histories of orders.
func (s *Store) Certificates(ctx context.Context, ids []int64) (map[int64][]certorder.CertificateEntry, error) {
	h, err := histories(ctx, s.pool, ids)
	return h, s.wrap("certificates", err)
}

// historyTx is storekit.HistoryWriter on a transaction.
type historyTx struct{ tx pgx.Tx }

func (h historyTx) Histories(ctx context.Context, ids []int64) (map[int64][]certorder.CertificateEntry, error) {
	return histories(ctx, h.tx, ids)
}

// SaveCertificates adds history entries in one COPY, and replaces those
// recorded already one statement each.
func (h historyTx) SaveCertificates(ctx context.Context, entries []certorder.CertificateEntry) error {
	members, err := orderMembers(ctx, h.tx, storekit.AddedOrders(entries))
	if err != nil {
		return err
	}
	stamp := time.Now()
	var inserts [][]any
	for _, e := range entries {
		row, err := historyRow(e, members[e.OrderID], stamp)
		if err != nil {
			return err
		}
		if e.Seq == 0 {
			inserts = append(inserts, row)
			continue
		}
		// The entry keeps its member (the row's last): its order's, which
		// never changes.
		if _, err := h.tx.Exec(ctx, `UPDATE order_certificates SET order_id = $1, cert_id = $2, serial_number = $3,
			thumbprint = $4, common_name = $5, dns_names = $6, status = $7, date_issued = $8, valid_from = $9,
			valid_till = $10, serial_key = $11, thumbprint_key = $12, recorded_at = $13 WHERE seq = $14`,
			append(row[:len(row)-1], e.Seq)...); err != nil {
			return err
		}
	}
	if len(inserts) == 0 {
		return nil
	}
	_, err = h.tx.CopyFrom(ctx, pgx.Identifier{"order_certificates"}, historyColumnNames, pgx.CopyFromRows(inserts))
	return err
}

// TrimCertificates keeps the newest keep entries of each order's history.
func (h historyTx) TrimCertificates(ctx context.Context, ids []int64, keep int) error {
	_, err := h.tx.Exec(ctx, `DELETE FROM order_certificates c WHERE c.order_id = ANY($1)
		AND c.seq < (SELECT n.seq FROM order_certificates n WHERE n.order_id = c.order_id
			ORDER BY n.seq DESC LIMIT 1 OFFSET $2)`, ids, keep-1)
	return err
}

var _ storekit.HistoryWriter = historyTx{}
