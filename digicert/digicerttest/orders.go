package digicerttest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// OrderSpec describes an order to add. Zero fields take defaults.
type OrderSpec struct {
	ContainerID   int64     // the division; default 1, created if unknown
	CommonName    string    // default "www.example.com"
	DNSNames      []string  // default [CommonName]
	ProductNameID string    // a name_id of Products; default "ssl_plus"
	ValidityYears int       // default 1
	Created       time.Time // default the simulator's now
	// APIKeyName, if set, records the order as placed with an API key of
	// that name (api_key {name, key_type: "api_key"}); ACMEDirectory as
	// placed through that ACME directory URL (key_type "acme_url").
	APIKeyName    string
	ACMEDirectory string
	// Wildcards is the number of purchased wildcard names.
	Wildcards int
}

// Product is a CertCentral product the simulator knows.
type Product struct {
	NameID, Name, Type, ValidationType, ValidationName string
}

// Products are the products orders may have.
var Products = []Product{
	{"ssl_plus", "Standard SSL", "ssl_certificate", "ov", "OV"},
	{"ssl_wildcard", "Wildcard SSL", "wildcard_ssl_certificate", "ov", "OV"},
	{"ssl_ev_plus", "EV SSL", "ssl_certificate", "ev", "EV"},
	{"ssl_basic", "Basic OV", "ssl_certificate", "ov", "OV"},
	{"ssl_dv_geotrust", "GeoTrust DV SSL", "ssl_certificate", "dv", "DV"},
}

// order is one order of the dataset.
type order struct {
	id, certID       int64
	containerID      int64
	commonName       string
	dnsNames         []string
	product          Product
	validityYears    int
	status           string
	created          time.Time
	issued           time.Time // zero until issued
	validFrom        time.Time
	validTill        time.Time
	statusChanged    time.Time // last status change; zero if none
	isRenewal        bool
	renewedBy        int64
	userID           int64
	receiptID        int64
	wildcards        int
	apiKeyName       string
	apiKeyType       string
	thumbprint, sern string
}

func (o *order) issuedYet() bool { return !o.issued.IsZero() }

// AddContainer creates (or renames) a division.
func (s *Server) AddContainer(id int64, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.containers[id] = name
}

// AddOrder adds a pending order and returns its ID. Creating an order is
// not a status change.
func (s *Server) AddOrder(spec OrderSpec) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addOrder(spec)
}

func (s *Server) addOrder(spec OrderSpec) (int64, error) {
	if spec.ContainerID == 0 {
		spec.ContainerID = 1
	}
	if spec.CommonName == "" {
		spec.CommonName = "www.example.com"
	}
	if spec.DNSNames == nil {
		spec.DNSNames = []string{spec.CommonName}
	}
	if spec.ProductNameID == "" {
		spec.ProductNameID = "ssl_plus"
	}
	if spec.ValidityYears == 0 {
		spec.ValidityYears = 1
	}
	if spec.Created.IsZero() {
		spec.Created = s.now()
	}
	i := slices.IndexFunc(Products, func(p Product) bool { return p.NameID == spec.ProductNameID })
	if i < 0 {
		return 0, fmt.Errorf("digicerttest: unknown product %q", spec.ProductNameID)
	}
	if spec.ValidityYears < 0 || spec.Wildcards < 0 {
		return 0, errors.New("digicerttest: validity years and wildcards cannot be negative")
	}
	if _, ok := s.containers[spec.ContainerID]; !ok {
		s.containers[spec.ContainerID] = fmt.Sprintf("Division %d", spec.ContainerID)
	}
	o := &order{
		id:            s.nextOrder,
		certID:        s.nextCert,
		containerID:   spec.ContainerID,
		commonName:    spec.CommonName,
		dnsNames:      slices.Clone(spec.DNSNames),
		product:       Products[i],
		validityYears: spec.ValidityYears,
		status:        "pending",
		created:       spec.Created.UTC().Truncate(time.Second),
		userID:        7000 + s.nextOrder%5,
		receiptID:     880000 + s.nextOrder,
		wildcards:     spec.Wildcards,
	}
	switch {
	case spec.ACMEDirectory != "":
		o.apiKeyName, o.apiKeyType = spec.ACMEDirectory, "acme_url"
	case spec.APIKeyName != "":
		o.apiKeyName, o.apiKeyType = spec.APIKeyName, "api_key"
	}
	s.nextOrder++
	s.nextCert++
	s.orders[o.id] = o
	s.ids = append(s.ids, o.id) // IDs only grow, so ids stays sorted
	return o.id, nil
}

// Issue issues an order's certificate at time at: status "issued", the
// certificate's dates, thumbprint and serial number; a status change.
func (s *Server) Issue(id int64, at time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.orders[id]
	if !ok {
		return fmt.Errorf("digicerttest: %w %d", errNoOrder, id)
	}
	before := *o
	s.issue(o, at)
	s.announce(o, before)
	return nil
}

// MaxCertificateDays is the longest a public TLS certificate issued at
// the given time may live, in days: 397 before 24 February 2026, when
// DigiCert moved to 199 days ahead of the CA/Browser Forum's ballot SC-081,
// whose later steps are 100 days from 15 March 2027 and 47 from 15 March
// 2029.
func MaxCertificateDays(at time.Time) int {
	switch at = at.UTC(); {
	case at.Before(time.Date(2026, 2, 24, 0, 0, 0, 0, time.UTC)):
		return 397
	case at.Before(time.Date(2027, 3, 15, 0, 0, 0, 0, time.UTC)):
		return 199
	case at.Before(time.Date(2029, 3, 15, 0, 0, 0, 0, time.UTC)):
		return 100
	}
	return 47
}

// planEnd is the end of an order's plan (order_valid_till): validity
// years after it was placed ("Multi-year plans": one to six years).
func (o *order) planEnd() time.Time {
	return o.created.Truncate(24*time.Hour).AddDate(o.validityYears, 0, 0)
}

// issue issues the order's certificate (its first, or a reissue's) at
// time at: valid from that day for MaxCertificateDays, never past the
// plan's end.
func (s *Server) issue(o *order, at time.Time) {
	at = at.UTC().Truncate(time.Second)
	o.issued = at
	o.validFrom = at.Truncate(24 * time.Hour)
	o.validTill = o.validFrom.AddDate(0, 0, MaxCertificateDays(at))
	if end := o.planEnd(); o.validTill.After(end) {
		o.validTill = end
	}
	sum := sha256.Sum256(fmt.Appendf(nil, "%d/%d/%d", o.id, o.certID, at.Unix()))
	o.thumbprint = hex.EncodeToString(sum[:20])
	o.sern = hex.EncodeToString(sum[20:32])
	s.byCertKey[o.thumbprint] = o.id
	s.byCertKey[o.sern] = o.id
	o.status = "issued"
	o.statusChanged = at
}

// Reissue starts a reissue of an issued order's certificate at time at,
// as the Services API's "Reissue certificate" does (a multi-year plan's
// certificates are reissued within the plan): the order keeps its number
// and gets a new certificate ID, its status is reissue_pending (a status
// change), and the new certificate has no serial, thumbprint or dates
// until Issue issues it.
func (s *Server) Reissue(id int64, at time.Time) (certID int64, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.orders[id]
	if !ok {
		return 0, fmt.Errorf("digicerttest: %w %d", errNoOrder, id)
	}
	if err := s.reissue(o, at); err != nil {
		return 0, fmt.Errorf("digicerttest: %w", err)
	}
	return o.certID, nil
}

// reissue is Reissue of an order found, with s.mu held.
func (s *Server) reissue(o *order, at time.Time) error {
	switch {
	case !o.issuedYet():
		return fmt.Errorf("order %d has no certificate to reissue", o.id)
	case !at.Before(o.planEnd()):
		return fmt.Errorf("order %d's plan ended on %s: renew it instead", o.id, date(o.planEnd()))
	}
	o.certID = s.nextCert
	s.nextCert++
	o.issued, o.validFrom, o.validTill, o.thumbprint, o.sern = time.Time{}, time.Time{}, time.Time{}, "", ""
	o.status = "reissue_pending"
	o.statusChanged = at.UTC().Truncate(time.Second)
	return nil
}

// SetStatus changes an order's status at time at (recorded as a status
// change). It sets no certificate dates: use Issue to issue.
func (s *Server) SetStatus(id int64, status string, at time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.orders[id]
	if !ok {
		return fmt.Errorf("digicerttest: %w %d", errNoOrder, id)
	}
	if status == "" {
		return errors.New("digicerttest: empty status")
	}
	before := *o
	o.status = status
	o.statusChanged = at.UTC().Truncate(time.Second)
	s.announce(o, before)
	return nil
}

// Renew places the renewal of order oldID at time at, in container
// containerID (0: the old order's): a new pending order with a new ID and
// is_renewal true; the old order gets is_renewed true and renewed_order_id.
// The old order's status does not change, so the renewal is not a status
// change.
func (s *Server) Renew(oldID, containerID int64, at time.Time) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, err := s.renew(oldID, containerID, at)
	if err != nil {
		return 0, fmt.Errorf("digicerttest: %w", err)
	}
	return id, nil
}

func (s *Server) renew(oldID, containerID int64, at time.Time) (int64, error) {
	old, ok := s.orders[oldID]
	if !ok {
		return 0, fmt.Errorf("%w %d", errNoOrder, oldID)
	}
	if old.renewedBy != 0 {
		return 0, fmt.Errorf("order %d is already renewed by %d", oldID, old.renewedBy)
	}
	if containerID == 0 {
		containerID = old.containerID
	}
	spec := OrderSpec{
		ContainerID: containerID, CommonName: old.commonName, DNSNames: old.dnsNames,
		ProductNameID: old.product.NameID, ValidityYears: old.validityYears, Created: at,
		Wildcards: old.wildcards,
	}
	switch old.apiKeyType {
	case "acme_url":
		spec.ACMEDirectory = old.apiKeyName
	case "api_key":
		spec.APIKeyName = old.apiKeyName
	}
	id, err := s.addOrder(spec)
	if err != nil {
		return 0, err
	}
	s.orders[id].isRenewal = true
	s.orders[id].userID = old.userID
	old.renewedBy = id
	return id, nil
}

// OrderInfo returns the Order info answer for an order, as the endpoint
// would give it now.
func (s *Server) OrderInfo(id int64) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.orders[id]
	if !ok {
		return nil, false
	}
	b, err := json.Marshal(s.info(o))
	return b, err == nil
}

// OrderIDs returns every order ID, ascending.
func (s *Server) OrderIDs() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.ids)
}

// RenewedBy returns the order that renewed id, 0 if none.
func (s *Server) RenewedBy(id int64) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if o, ok := s.orders[id]; ok {
		return o.renewedBy
	}
	return 0
}

// ContainerOf returns the division of an order, 0 if there is no such order.
func (s *Server) ContainerOf(id int64) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if o, ok := s.orders[id]; ok {
		return o.containerID
	}
	return 0
}
