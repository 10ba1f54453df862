package orderdoc_test

import (
	"testing"

	"github.com/certorder/certorder/internal/orderdoc"
)

// benchDoc is one of cmd/loadbench's orders (writeOrders), shaped like
// CertCentral's: what an import of a million orders parses a million times.
const benchDoc = `{"OrderId":7,"certificate":{"id":100007,"thumbprint":"000000000000000000000000000000000000D891","serial_number":"000000000000000000000000000B2FBF","common_name":"host7.example.com","dns_names":["host7.example.com","www.host7.example.com"],"status":"issued","date_created":"2026-01-02T10:11:12+00:00","date_issued":"2026-01-03T00:00:00+00:00","valid_from":"2026-01-03","valid_till":"2027-01-03","cert_validity":{"years":1},"csr":"-----BEGIN CERTIFICATE REQUEST-----\nMIICvDCCAaQCAQAwdzELMAkGA1UEBhMCVVMxDTALBgNVBAgMBFV0YWgxDzANBgNVBAcMBkxp\nbmRvbjEWMBQGA1UECgwNRGlnaUNlcnQgSW5jLjERMA8GA1UECwwIRGlnaUNlcnQxHTAbBgNV\n-----END CERTIFICATE REQUEST-----","is_rsassa_pss":false,"signature_hash":"sha256","key_size":2048,"ca_cert":{"id":"5D10C6E0F0A4","name":"DigiCert Global G2 TLS RSA SHA256 2020 CA1"},"user_id":"31337","receipt_id":8800007,"purchased_dns_names":"1","purchased_wildcard_names":"0"},"status":"issued","is_renewed":true,"was_renewed_by_order_id":8,"date_created":"2026-01-02T10:11:12+00:00","date_issued":"2026-01-03T00:00:00+00:00","validity_years":1,"order_valid_from":"2026-01-03","order_valid_till":"2027-01-03","product":{"name_id":"ssl_plus","name":"Standard SSL","type":"ssl_certificate","csr_required":true},"purchased_dns_names":1,"purchased_wildcard_names":null,"api_key":{"name":"acme","key_type":"acme"}}`

// BenchmarkParse parses one loadbench order: the share of an import's and
// a restore's CPU that is the document's checks (half, by -bench ImportFile's
// profile, before 2026-11-25's changes).
func BenchmarkParse(b *testing.B) {
	doc := []byte(benchDoc)
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := orderdoc.Parse(doc); err != nil {
			b.Fatal(err)
		}
	}
}
