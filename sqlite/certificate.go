package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/storekit"
)

// historyTx is storekit.HistoryWriter on a transaction.
type historyTx struct {
	tx     *sql.Tx
	insert *sql.Stmt // insertCertificate for historyBatchRows rows, prepared at its first use
}

func (h *historyTx) Histories(ctx context.Context, orders []*certorder.Order) (map[int64][]certorder.CertificateEntry, error) {
	return storekit.Histories(ctx, sqlDB{q: h.tx}, inList, listJSON, orders)
}

// SaveCertificates adds history entries, a multi-row insert per
// historyBatchRows of them, prepared once a transaction, as the orders'
// (the import and the sync add the certificates reissues replaced, a
// restore an order's history; preparing the statement for each
// batch, and the look-up keys built with a strings.Replacer, had made an
// import of new orders 1.6 times as long: docs/PERFORMANCE.md, issue 44).
// An entry takes its order's member (CertificateCheck looks up by key and
// member).
func (h *historyTx) SaveCertificates(ctx context.Context, entries []certorder.CertificateEntry) error {
	members, err := orderMembers(ctx, h.tx, storekit.AddedOrders(entries))
	if err != nil {
		return err
	}
	return h.saveCertificates(ctx, entries, func(order int64) int64 { return members[order] })
}

// saveCertificates is SaveCertificates with the member of each new
// entry's order known (memberOf): an import's orders are all its member's,
// and reading them back took 8% of its instructions (callgrind, 20,000
// orders).
func (h *historyTx) saveCertificates(ctx context.Context, entries []certorder.CertificateEntry, memberOf func(order int64) int64) error {
	stamp := now()
	inserts := make([]any, 0, min(len(entries), historyBatchRows)*historyFields)
	flush := func() error {
		if len(inserts) == 0 {
			return nil
		}
		stmt, n := h.insert, len(inserts)/historyFields
		if n != historyBatchRows || stmt == nil {
			var err error
			if stmt, err = h.tx.PrepareContext(ctx, multiRow(insertCertificate, n)); err != nil {
				return err
			}
			if n == historyBatchRows {
				h.insert = stmt
			} else {
				defer stmt.Close()
			}
		}
		_, err := stmt.ExecContext(ctx, inserts...)
		inserts = inserts[:0]
		return err
	}
	for _, e := range entries {
		names, err := json.Marshal(dnsNames(e.DNSNames))
		if err != nil {
			return err
		}
		args := []any{e.OrderID, e.ID, e.SerialNumber, e.Thumbprint, e.CommonName, string(names), e.Status, e.DateIssued,
			e.ValidFrom, e.ValidTill, certorder.SerialKey(e.SerialNumber), certorder.HexKey(e.Thumbprint), stamp, memberOf(e.OrderID)}
		if inserts = append(inserts, args...); len(inserts) == historyBatchRows*historyFields {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

// close closes the statement SaveCertificates prepared.
func (h *historyTx) close() {
	if h.insert != nil {
		h.insert.Close()
	}
}

// DeleteCertificates deletes the history entries of the Seqs.
func (h *historyTx) DeleteCertificates(ctx context.Context, seqs []int64) error {
	_, err := h.tx.ExecContext(ctx, `DELETE FROM order_certificates WHERE `+inList("seq"), idsJSON(seqs))
	return err
}

const insertCertificate = `INSERT INTO order_certificates (order_id, cert_id, serial_number, thumbprint,
	common_name, dns_names, status, date_issued, valid_from, valid_till, serial_key, thumbprint_key, recorded_at, member_id)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// The columns of insertCertificate, and the rows of its multi-row form
// (SQLite takes at most 32766 variables).
const (
	historyFields    = 14
	historyBatchRows = 500
)

// dnsNames is names as stored: an empty array for none.
func dnsNames(names []string) []string {
	if names == nil {
		return []string{}
	}
	return names
}

var _ storekit.HistoryWriter = (*historyTx)(nil)
