// Package digicert is a client of the DigiCert CertCentral Services API v2,
// limited to the endpoints an order sync needs: List orders, Order info and
// the Order status change list. It keeps inside DigiCert's documented per-key
// rate limits with a client-side limiter, retries what is worth retrying
// (429, 5xx, network errors) with exponential backoff and jitter, and counts
// every request by HTTP status.
//
// The API key travels only in the X-DC-DEVKEY header; it never appears in an
// error, in String() or in anything this package prints.
//
// SpecOrder turns an Order info answer into the order object of the
// certorder interface (docs/interface.md sections 2.2 to 2.5); the
// field mapping, with the DigiCert pages it rests on, is docs/SYNC.md.
//
// The sibling package digicerttest is a CertCentral simulator for tests.
package digicert
