package certorder

import "time"

// The CertCentral sync (package ccsync) keeps the store in step with the
// CA; its protocol with the stores is internal/storekit's (SyncStore, the
// transaction SyncTx that ccsync.ApplyUpstream writes through). Here: the
// divisions linked to members, and what a write did to an order.

// ContainerLink ties a member to a division (a CertCentral container) of
// the reseller's CA account: the sync gives the member the orders placed in
// it. A division is linked to at most one member.
type ContainerLink struct {
	Container int64
	MemberID  int64
	Member    string
	CreatedAt time.Time
}

// OrderChange is what a write did to one of a member's orders. It is what
// the audit trail records of a sync, and what its events are made of
// (Events).
type OrderChange struct {
	OrderID           int64
	MemberID          int64
	Added             bool // the member did not have the order before
	Adopted           bool // Added, and it was unassigned before
	PreviousStatus    string
	Status            string
	PreviousRenewedBy int64
	RenewedBy         int64
	// Reissue is set when the write gave the order a newly issued
	// certificate in place of an earlier one (PlanCertificates).
	Reissue *ReissuedData
}

// StatusChanged reports a change of status of an order the member had.
func (c OrderChange) StatusChanged() bool { return !c.Added && c.PreviousStatus != c.Status }

// RenewalLinked reports that the write recorded the order's renewal.
func (c OrderChange) RenewalLinked() bool {
	return c.RenewedBy != 0 && c.RenewedBy != c.PreviousRenewedBy
}
