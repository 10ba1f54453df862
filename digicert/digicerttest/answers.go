package digicerttest

import (
	"fmt"
	"time"
)

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

func date(t time.Time) string { return t.UTC().Format(time.DateOnly) }

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
			Days int `json:"days"`
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
	c.CertValidity.Days = MaxCertificateDays(s.now())
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
	j.OrderValidTill = date(o.planEnd())
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
