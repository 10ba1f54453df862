package credcache_test

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	mrand "math/rand/v2"
	"runtime"
	"testing"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/credcache"
)

// document is an order document shaped like CertCentral's (as
// cmd/loadbench writes them); with realCSR, its thumbprint, serial number
// and CSR are random, full-size, as real ones are: they do not compress.
func document(i int, realCSR bool) []byte {
	csr := "MIICvDCCAaQCAQAwdzELMAkGA1UEBhMCVVMxDTALBgNVBAgMBFV0YWgxDzANBgNVBAcMBkxp\\nbmRvbjEWMBQGA1UECgwNRGlnaUNlcnQgSW5jLjERMA8GA1UECwwIRGlnaUNlcnQxHTAbBgNV\\n"
	th, ser := fmt.Sprintf("%040X", i*7919), fmt.Sprintf("%032X", i*104729)
	if realCSR {
		b := make([]byte, 700)
		rand.Read(b)
		csr = base64.StdEncoding.EncodeToString(b)
		th, ser = fmt.Sprintf("%040X", b[:20]), fmt.Sprintf("%032X", b[20:36])
	}
	return []byte(fmt.Sprintf(`{"OrderId":%d,"certificate":{"id":%d,"thumbprint":"%s","serial_number":"%s",`+
		`"common_name":"host%d.example.com","dns_names":["host%d.example.com","www.host%d.example.com"],`+
		`"status":"issued","date_created":"2026-01-02T10:11:12+00:00","date_issued":"2026-01-03T00:00:00+00:00",`+
		`"valid_from":"2026-01-03","valid_till":"2027-01-03","cert_validity":{"years":1},`+
		`"csr":"-----BEGIN CERTIFICATE REQUEST-----\n%s\n-----END CERTIFICATE REQUEST-----",`+
		`"is_rsassa_pss":false,"signature_hash":"sha256","key_size":2048,`+
		`"ca_cert":{"id":"5D10C6E0F0A4","name":"DigiCert Global G2 TLS RSA SHA256 2020 CA1"},`+
		`"user_id":"31337","receipt_id":%d,"purchased_dns_names":"1","purchased_wildcard_names":"0"},`+
		`"status":"issued","date_created":"2026-01-02T10:11:12+00:00","date_issued":"2026-01-03T00:00:00+00:00",`+
		`"validity_years":1,"order_valid_from":"2026-01-03","order_valid_till":"2027-01-03",`+
		`"product":{"name_id":"ssl_plus","name":"Standard SSL","type":"ssl_certificate","csr_required":true},`+
		`"purchased_dns_names":1,"purchased_wildcard_names":null,"api_key":{"name":"acme","key_type":"acme"}}`,
		i, 100000+i, th, ser, i, i, i, csr, 8800000+i))
}

func docOrder(i int, realCSR bool) *certorder.Order {
	doc := document(i, realCSR)
	o := order(int64(i), 3, string(doc))
	o.CertEnd = bytes.Index(doc, []byte(`},"status"`)) + 1
	o.Member = "alice"
	o.Certificate.CommonName = fmt.Sprintf("host%d.example.com", i)
	return o
}

// BenchmarkMemoryPerOrder reports the heap an order costs in a full
// cache (entries held / heap growth), and the
// hit's time.
func BenchmarkMemoryPerOrder(b *testing.B) {
	for _, realCSR := range []bool{false, true} {
		b.Run(fmt.Sprintf("realCSR=%v", realCSR), func(b *testing.B) {
			orders := make([]*certorder.Order, 2000)
			for i := range orders {
				orders[i] = docOrder(i+1, realCSR)
			}
			var m0, m1 runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&m0)
			c := credcache.New(64 << 20)
			defer c.Close()
			cred := credential("0123456789ab", "alice", 3)
			c.Fill(1, cred, 0, nil)
			const n = 400000
			for i := 1; i <= n; i++ {
				c.FillOrder(1, 3, int64(i), orders[i%len(orders)])
			}
			runtime.GC()
			runtime.ReadMemStats(&m1)
			entries, _, _ := c.Stats()
			b.ResetTimer()
			held := 0
			for i := 0; i < b.N; i++ {
				id := int64(1 + mrand.IntN(n))
				if _, o, _, ok := c.Find(1, cred.KeyID, id); ok && o != nil {
					held++
				}
			}
			b.ReportMetric(float64(held)/float64(b.N), "held")
			b.ReportMetric(float64(m1.HeapAlloc-m0.HeapAlloc)/float64(entries), "heapB/order")
			b.ReportMetric(float64(entries), "orders")
		})
	}
}

// BenchmarkGCFull is a full collection with a full 64 MiB cache: the
// collector's work per cycle, which the cache's entries make.
func BenchmarkGCFull(b *testing.B) {
	c := credcache.New(64 << 20)
	defer c.Close()
	cred := credential("0123456789ab", "alice", 3)
	c.Fill(1, cred, 0, nil)
	orders := make([]*certorder.Order, 2000)
	for i := range orders {
		orders[i] = docOrder(i+1, false)
	}
	for i := 1; i <= 400000; i++ {
		c.FillOrder(1, 3, int64(i), orders[i%len(orders)])
	}
	entries, _, _ := c.Stats()
	runtime.GC()
	b.ResetTimer()
	for b.Loop() {
		runtime.GC()
	}
	b.ReportMetric(float64(entries), "orders")
}
