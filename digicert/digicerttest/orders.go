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
		return fmt.Errorf("digicerttest: no order %d", id)
	}
	s.issue(o, at)
	return nil
}

func (s *Server) issue(o *order, at time.Time) {
	at = at.UTC().Truncate(time.Second)
	o.issued = at
	o.validFrom = at.Truncate(24 * time.Hour)
	o.validTill = o.validFrom.AddDate(1, 0, 0)
	sum := sha256.Sum256(fmt.Appendf(nil, "%d/%d/%d", o.id, o.certID, at.Unix()))
	o.thumbprint = hex.EncodeToString(sum[:20])
	o.sern = hex.EncodeToString(sum[20:32])
	s.byCertKey[o.thumbprint] = o.id
	s.byCertKey[o.sern] = o.id
	o.status = "issued"
	o.statusChanged = at
}

// SetStatus changes an order's status at time at (recorded as a status
// change). It sets no certificate dates: use Issue to issue.
func (s *Server) SetStatus(id int64, status string, at time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.orders[id]
	if !ok {
		return fmt.Errorf("digicerttest: no order %d", id)
	}
	if status == "" {
		return errors.New("digicerttest: empty status")
	}
	o.status = status
	o.statusChanged = at.UTC().Truncate(time.Second)
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
	return s.renew(oldID, containerID, at)
}

func (s *Server) renew(oldID, containerID int64, at time.Time) (int64, error) {
	old, ok := s.orders[oldID]
	if !ok {
		return 0, fmt.Errorf("digicerttest: no order %d", oldID)
	}
	if old.renewedBy != 0 {
		return 0, fmt.Errorf("digicerttest: order %d is already renewed by %d", oldID, old.renewedBy)
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

// Personal data the simulator puts in every Order info answer, as
// CertCentral does: contacts, the ordering user, notes. A mapping must drop
// all of it; tests look for these strings in its output.
var (
	firstNames = []string{"Ada", "Grace", "Linus", "Margaret", "Ken"}
	lastNames  = []string{"Lovelace", "Hopper", "Torvalds", "Hamilton", "Thompson"}
)

func person(n int64) (first, last, email, phone string) {
	first, last = firstNames[n%5], lastNames[(n/5)%5]
	return first, last, fmt.Sprintf("%s.%s@example.net", first, last), fmt.Sprintf("+1 801 555 %04d", n%10000)
}

const dateTimeLayout = "2006-01-02T15:04:05-07:00" // "2018-10-16T17:29:56+00:00"

func dateTime(t time.Time) string { return t.UTC().Format(dateTimeLayout) }
func date(t time.Time) string     { return t.UTC().Format(time.DateOnly) }

// The JSON shapes, in the field order of DigiCert's examples.
type (
	idName struct {
		ID   int64  `json:"id"`
		Name string `json:"name"`
	}
	contactJSON struct {
		FirstName string `json:"first_name"`
		LastName  string `json:"last_name"`
		JobTitle  string `json:"job_title,omitempty"`
		Email     string `json:"email"`
		Telephone string `json:"telephone,omitempty"`
	}
	userJSON struct {
		ID        int64  `json:"id"`
		FirstName string `json:"first_name"`
		LastName  string `json:"last_name"`
		Email     string `json:"email"`
	}
	certJSON struct {
		ID            int64    `json:"id"`
		Thumbprint    string   `json:"thumbprint,omitempty"`
		SerialNumber  string   `json:"serial_number,omitempty"`
		CommonName    string   `json:"common_name"`
		DNSNames      []string `json:"dns_names"`
		DateCreated   string   `json:"date_created"`
		DateIssued    string   `json:"date_issued,omitempty"`
		ValidFrom     string   `json:"valid_from,omitempty"`
		ValidTill     string   `json:"valid_till,omitempty"`
		DaysRemaining *int     `json:"days_remaining,omitempty"`
		CSR           string   `json:"csr"`
		Organization  struct {
			ID int64 `json:"id"`
		} `json:"organization"`
		OrganizationUnits []string `json:"organization_units"`
		ServerPlatform    struct {
			ID         int    `json:"id"`
			Name       string `json:"name"`
			InstallURL string `json:"install_url"`
			CSRURL     string `json:"csr_url"`
		} `json:"server_platform"`
		SignatureHash string `json:"signature_hash"`
		KeySize       int    `json:"key_size"`
		CACert        *struct {
			ID   string `json:"id"`
			Name string `json:"name"`
		} `json:"ca_cert,omitempty"`
		CertValidity struct {
			Years int `json:"years"`
		} `json:"cert_validity"`
	}
	productJSON struct {
		NameID                string `json:"name_id"`
		Name                  string `json:"name"`
		Type                  string `json:"type"`
		ValidationType        string `json:"validation_type"`
		ValidationName        string `json:"validation_name"`
		ValidationDescription string `json:"validation_description"`
		CSRRequired           bool   `json:"csr_required"`
	}
	infoJSON struct {
		ID             int64    `json:"id"`
		Certificate    certJSON `json:"certificate"`
		Status         string   `json:"status"`
		IsRenewal      bool     `json:"is_renewal"`
		IsRenewed      bool     `json:"is_renewed"`
		RenewedOrderID int64    `json:"renewed_order_id"`
		DateCreated    string   `json:"date_created"`
		Organization   struct {
			ID          int64  `json:"id"`
			Name        string `json:"name"`
			DisplayName string `json:"display_name"`
			IsActive    bool   `json:"is_active"`
			City        string `json:"city"`
			State       string `json:"state"`
			Country     string `json:"country"`
		} `json:"organization"`
		DisableRenewalNotifications bool        `json:"disable_renewal_notifications"`
		Container                   idName      `json:"container"`
		Product                     productJSON `json:"product"`
		OrganizationContact         contactJSON `json:"organization_contact"`
		TechnicalContact            contactJSON `json:"technical_contact"`
		User                        userJSON    `json:"user"`
		Requests                    []struct {
			ID       int64  `json:"id"`
			Date     string `json:"date"`
			Type     string `json:"type"`
			Status   string `json:"status"`
			Comments string `json:"comments"`
		} `json:"requests"`
		ReceiptID              int64      `json:"receipt_id"`
		CSProvisioningMethod   string     `json:"cs_provisioning_method"`
		SendMinus90            bool       `json:"send_minus_90"`
		SendMinus60            bool       `json:"send_minus_60"`
		SendMinus30            bool       `json:"send_minus_30"`
		SendMinus7             bool       `json:"send_minus_7"`
		SendMinus3             bool       `json:"send_minus_3"`
		SendPlus7              bool       `json:"send_plus_7"`
		AllowDuplicates        bool       `json:"allow_duplicates"`
		UserAssignments        []userJSON `json:"user_assignments"`
		PaymentMethod          string     `json:"payment_method"`
		ProductNameID          string     `json:"product_name_id"`
		ValidityYears          int        `json:"validity_years"`
		OrderValidFrom         string     `json:"order_valid_from"`
		OrderValidTill         string     `json:"order_valid_till"`
		PurchasedDNSNames      int        `json:"purchased_dns_names"`
		PurchasedWildcardNames int        `json:"purchased_wildcard_names"`
		APIKey                 *struct {
			Name    string `json:"name"`
			KeyType string `json:"key_type"`
		} `json:"api_key,omitempty"`
		Notes []struct {
			ID   int64  `json:"id"`
			Text string `json:"text"`
		} `json:"notes"`
	}
	listItemJSON struct {
		ID          int64 `json:"id"`
		Certificate struct {
			ID            int64    `json:"id"`
			CommonName    string   `json:"common_name"`
			DNSNames      []string `json:"dns_names"`
			ValidTill     string   `json:"valid_till,omitempty"`
			DaysRemaining *int     `json:"days_remaining,omitempty"`
			SignatureHash string   `json:"signature_hash"`
		} `json:"certificate"`
		Status                      string `json:"status"`
		IsRenewed                   bool   `json:"is_renewed"`
		DateCreated                 string `json:"date_created"`
		Organization                idName `json:"organization"`
		ValidityYears               int    `json:"validity_years"`
		DisableRenewalNotifications bool   `json:"disable_renewal_notifications"`
		Container                   idName `json:"container"`
		Product                     struct {
			NameID string `json:"name_id"`
			Name   string `json:"name"`
			Type   string `json:"type"`
		} `json:"product"`
	}
)

func (s *Server) daysRemaining(o *order) *int {
	if !o.issuedYet() {
		return nil
	}
	today := s.now().UTC().Truncate(24 * time.Hour)
	d := int(o.validTill.Sub(today).Hours() / 24)
	return &d
}

func orgID(containerID int64) int64 { return 112200 + containerID%7 }

// info renders the Order info answer of o.
func (s *Server) info(o *order) infoJSON {
	var j infoJSON
	j.ID = o.id
	c := &j.Certificate
	c.ID = o.certID
	c.CommonName = o.commonName
	c.DNSNames = o.dnsNames
	c.DateCreated = dateTime(o.created)
	c.CSR = "-----BEGIN CERTIFICATE REQUEST-----\nMIICsim" + fmt.Sprint(o.id) + "\n-----END CERTIFICATE REQUEST-----"
	c.Organization.ID = orgID(o.containerID)
	c.OrganizationUnits = []string{"Platform Team"}
	c.ServerPlatform.ID = -1
	c.ServerPlatform.Name = "OTHER"
	c.ServerPlatform.InstallURL = "https://www.digicert.com/SSL-certificate-installation.htm"
	c.ServerPlatform.CSRURL = "https://www.digicert.com/csr-creation.htm"
	c.SignatureHash = "sha256"
	c.KeySize = 2048
	c.CertValidity.Years = 1
	if o.issuedYet() {
		c.Thumbprint = o.thumbprint
		c.SerialNumber = o.sern
		c.DateIssued = dateTime(o.issued)
		c.ValidFrom = date(o.validFrom)
		c.ValidTill = date(o.validTill)
		c.DaysRemaining = s.daysRemaining(o)
		c.CACert = &struct {
			ID   string `json:"id"`
			Name string `json:"name"`
		}{"A1B2C3D4E5", "DigiCert Global G2 TLS RSA SHA256 2020 CA1"}
	}
	j.Status = o.status
	j.IsRenewal = o.isRenewal
	j.IsRenewed = o.renewedBy != 0
	j.RenewedOrderID = o.renewedBy
	j.DateCreated = dateTime(o.created)
	j.Organization.ID = orgID(o.containerID)
	j.Organization.Name = fmt.Sprintf("Example Holdings %d LLC", orgID(o.containerID))
	j.Organization.DisplayName = j.Organization.Name
	j.Organization.IsActive = true
	j.Organization.City, j.Organization.State, j.Organization.Country = "Lehi", "Utah", "us"
	j.Container = idName{o.containerID, s.containers[o.containerID]}
	j.Product = productJSON{o.product.NameID, o.product.Name, o.product.Type, o.product.ValidationType,
		o.product.ValidationName, o.product.ValidationName + " validation", true}
	first, last, email, phone := person(o.id)
	j.OrganizationContact = contactJSON{first, last, "Security Officer", email, phone}
	j.TechnicalContact = j.OrganizationContact
	ufirst, ulast, uemail, _ := person(o.userID)
	j.User = userJSON{o.userID, ufirst, ulast, uemail}
	j.UserAssignments = []userJSON{j.User}
	j.Requests = append(j.Requests, struct {
		ID       int64  `json:"id"`
		Date     string `json:"date"`
		Type     string `json:"type"`
		Status   string `json:"status"`
		Comments string `json:"comments"`
	}{o.id + 900000, dateTime(o.created), "new_request", "approved", "Requested by " + ufirst + " " + ulast})
	j.ReceiptID = o.receiptID
	j.CSProvisioningMethod = "none"
	j.SendMinus90, j.SendMinus60, j.SendMinus30, j.SendMinus7, j.SendMinus3, j.SendPlus7 = true, true, true, true, true, false
	j.PaymentMethod = "balance"
	j.ProductNameID = o.product.NameID
	j.ValidityYears = o.validityYears
	j.OrderValidFrom = date(o.created)
	j.OrderValidTill = date(o.created.AddDate(o.validityYears, 0, 0))
	j.PurchasedDNSNames = len(o.dnsNames)
	j.PurchasedWildcardNames = o.wildcards
	if o.apiKeyName != "" {
		j.APIKey = &struct {
			Name    string `json:"name"`
			KeyType string `json:"key_type"`
		}{o.apiKeyName, o.apiKeyType}
	}
	j.Notes = append(j.Notes, struct {
		ID   int64  `json:"id"`
		Text string `json:"text"`
	}{o.id, "Call " + first + " " + last + " at " + phone + " before renewing."})
	return j
}

// listItem renders o as List orders gives it.
func (s *Server) listItem(o *order) listItemJSON {
	var j listItemJSON
	j.ID = o.id
	j.Certificate.ID = o.certID
	j.Certificate.CommonName = o.commonName
	j.Certificate.DNSNames = o.dnsNames
	if o.issuedYet() {
		j.Certificate.ValidTill = date(o.validTill)
		j.Certificate.DaysRemaining = s.daysRemaining(o)
	}
	j.Certificate.SignatureHash = "sha256"
	j.Status = o.status
	j.IsRenewed = o.renewedBy != 0
	j.DateCreated = dateTime(o.created)
	j.Organization = idName{orgID(o.containerID), fmt.Sprintf("Example Holdings %d LLC", orgID(o.containerID))}
	j.ValidityYears = o.validityYears
	j.Container = idName{o.containerID, s.containers[o.containerID]}
	j.Product.NameID, j.Product.Name, j.Product.Type = o.product.NameID, o.product.Name, o.product.Type
	return j
}
