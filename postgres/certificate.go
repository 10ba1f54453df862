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

// historyTx is storekit.HistoryWriter on a transaction.
type historyTx struct{ tx pgx.Tx }

func (h historyTx) Histories(ctx context.Context, orders []*certorder.Order) (map[int64][]certorder.CertificateEntry, error) {
	return storekit.Histories(ctx, pgDB{h.tx}, inList, arrayArg, orders)
}

// SaveCertificates adds history entries in one COPY.
func (h historyTx) SaveCertificates(ctx context.Context, entries []certorder.CertificateEntry) error {
	if len(entries) == 0 {
		return nil
	}
	members, err := orderMembers(ctx, h.tx, storekit.AddedOrders(entries))
	if err != nil {
		return err
	}
	stamp := time.Now()
	inserts := make([][]any, len(entries))
	for i, e := range entries {
		if inserts[i], err = historyRow(e, members[e.OrderID], stamp); err != nil {
			return err
		}
	}
	_, err = h.tx.CopyFrom(ctx, pgx.Identifier{"order_certificates"}, historyColumnNames, pgx.CopyFromRows(inserts))
	return err
}

// DeleteCertificates deletes the history entries of the Seqs.
func (h historyTx) DeleteCertificates(ctx context.Context, seqs []int64) error {
	_, err := h.tx.Exec(ctx, `DELETE FROM order_certificates WHERE seq = ANY($1)`, seqs)
	return err
}

var _ storekit.HistoryWriter = historyTx{}
