package storekit

import (
	"fmt"

	"github.com/certorder/certorder"
)

// OrderColumns are the columns of the stored order (alias o) that every
// order read of either store scans, into an OrderRow. They are never NULL,
// so that a LEFT JOIN that found no order reads as order 0 without a
// nullable type (which would cost pgx an allocation a column).
const OrderColumns = `COALESCE(o.id, 0), COALESCE(o.member_id, 0), COALESCE(o.common_name, ''), COALESCE(o.status, ''),
	COALESCE(o.valid_till, ''), COALESCE(o.renewed_by, 0), o.doc, COALESCE(o.cert_end, 0), COALESCE(o.doc_format, 0)`

// NoOrderColumns stand in for OrderColumns in a read that joins no order.
const NoOrderColumns = `0, 0, '', '', '', 0, NULL, 0, 0`

// OrderRow is one row of OrderColumns: the one scan of the stored order.
type OrderRow struct {
	ID, MemberID                  int64
	CommonName, Status, ValidTill string
	RenewedBy                     int64
	Doc                           []byte
	CertEnd, Format               int64
}

// Dest is where a Scan of OrderColumns puts them, in their order.
func (r *OrderRow) Dest() []any {
	return []any{&r.ID, &r.MemberID, &r.CommonName, &r.Status, &r.ValidTill, &r.RenewedBy, &r.Doc, &r.CertEnd, &r.Format}
}

// Order is the scanned order, nil if there was none. A row stored in
// another document format is refused rather than answered wrong.
func (r *OrderRow) Order() (*certorder.Order, error) {
	if r.ID == 0 {
		return nil, nil
	}
	doc, err := Document("order", r.ID, r.Doc, r.Format)
	if err != nil {
		return nil, err
	}
	return &certorder.Order{ID: r.ID, MemberID: r.MemberID, Status: r.Status,
		Certificate: certorder.Certificate{CommonName: r.CommonName, ValidTill: r.ValidTill},
		RenewedBy:   r.RenewedBy, Doc: doc, CertEnd: int(r.CertEnd)}, nil
}

// MemberOrder is the order of a credential's read (OrderColumns joined to
// the key's member), with the member's name; nil when there was none.
func (r *OrderRow) MemberOrder(c *certorder.Credential) (*certorder.Order, error) {
	o, err := r.Order()
	if o != nil {
		o.Member = c.Member
	}
	return o, err
}

// CredentialColumns are the columns of the hot path's one read (aliases k
// for the key, m for its member), before OrderColumns or NoOrderColumns.
const CredentialColumns = `k.id, k.hash, k.revoked_at IS NOT NULL, m.id, m.name, m.disabled`

// CredentialRow is one row of CredentialColumns and OrderColumns.
type CredentialRow struct {
	C certorder.Credential
	O OrderRow
}

// Dest is where a Scan of the row puts its columns.
func (r *CredentialRow) Dest() []any {
	return []any{&r.C.KeyID, &r.C.KeyHash, &r.C.KeyRevoked, &r.C.MemberID, &r.C.Member, &r.C.MemberDisabled,
		&r.O.ID, &r.O.MemberID, &r.O.CommonName, &r.O.Status, &r.O.ValidTill, &r.O.RenewedBy, &r.O.Doc, &r.O.CertEnd, &r.O.Format}
}

// Result is FindCredential's answer of the row, read with err (noRows:
// no such key); wrap is the store's rule for its errors.
func (r *CredentialRow) Result(keyID string, err error, noRows bool, wrap func(string, error) error) (certorder.Credential, *certorder.Order, error) {
	if noRows {
		return r.C, nil, fmt.Errorf("%w: key %s", certorder.ErrNotFound, keyID)
	}
	if err != nil {
		return r.C, nil, wrap("find credential", err)
	}
	order, err := r.O.MemberOrder(&r.C)
	return r.C, order, wrap("find credential", err)
}
