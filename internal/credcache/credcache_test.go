package credcache_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/credcache"
)

func credential(keyID, member string, memberID int64) certorder.Credential {
	return certorder.Credential{KeyID: keyID, KeyHash: bytes.Repeat([]byte{7}, 32), MemberID: memberID, Member: member}
}

func order(id, memberID int64, doc string) *certorder.Order {
	return &certorder.Order{ID: id, MemberID: memberID, Certificate: certorder.Certificate{CommonName: "a.example", ValidTill: "2030-01-01"}, Status: "issued",
		RenewedBy: id + 1, Doc: []byte(doc), CertEnd: strings.Index(doc, "}")}
}

// What is filled under a generation is found under it, exactly, and
// never under another.
func TestGenerations(t *testing.T) {
	c := credcache.New(credcache.MinBytes)
	defer c.Close()
	cred := credential("0123456789ab", "alice", 3)
	cred.KeyRevoked = true
	o := order(42, 3, `{"OrderId":42,"certificate":{"x":1},"status":"issued"}`)
	o.Member = "alice" // as FindCredential returns it
	c.Fill(5, cred, 42, o)
	c.Fill(5, cred, 43, nil) // alice has no order 43

	got, gotOrder, _, ok := c.Find(5, cred.KeyID, 42)
	if !ok || got.KeyID != cred.KeyID || !bytes.Equal(got.KeyHash, cred.KeyHash) || !got.KeyRevoked || got.MemberDisabled ||
		got.MemberID != 3 || got.Member != "alice" {
		t.Fatalf("credential %+v, %v", got, ok)
	}
	if gotOrder == nil || gotOrder.ID != 42 || gotOrder.MemberID != 3 || gotOrder.Member != "alice" || gotOrder.RenewedBy != 43 ||
		gotOrder.Certificate.ValidTill != o.Certificate.ValidTill || gotOrder.Certificate.CommonName != o.Certificate.CommonName || gotOrder.Status != o.Status ||
		gotOrder.CertEnd != o.CertEnd || !bytes.Equal(gotOrder.Doc, o.Doc) {
		t.Fatalf("order %+v", gotOrder)
	}
	if _, missing, _, ok := c.Find(5, cred.KeyID, 43); !ok || missing != nil {
		t.Fatalf("absent order: %+v, %v", missing, ok)
	}
	if _, none, _, ok := c.Find(5, cred.KeyID, 0); !ok || none != nil {
		t.Fatalf("no order asked: %+v, %v", none, ok)
	}
	for _, miss := range []struct {
		gen   uint64
		key   string
		order int64
	}{{6, cred.KeyID, 42}, {4, cred.KeyID, 42}, {5, "ba9876543210", 42}, {5, cred.KeyID, 44}} {
		if _, _, _, ok := c.Find(miss.gen, miss.key, miss.order); ok {
			t.Errorf("found %+v", miss)
		}
	}
	// A fill of an older generation than the newest seen is not found
	// under the newest.
	c.Fill(6, credential("ba9876543210", "bob", 4), 0, nil)
	c.Fill(5, credential("ba9876543210", "mallory", 4), 0, nil)
	if got, _, _, ok := c.Find(6, "ba9876543210", 0); !ok || got.Member != "bob" {
		t.Fatalf("generation 6: %+v, %v", got, ok)
	}
	if entries, hits, misses := c.Stats(); entries == 0 || hits == 0 || misses == 0 {
		t.Fatalf("stats %d %d %d", entries, hits, misses)
	}
}

// Credentials beyond the map's share go to otter; an order too large
// for the cache is not cached (and not wrongly found).
func TestBounds(t *testing.T) {
	c := credcache.New(credcache.MinBytes)
	defer c.Close()
	for i := range 2000 {
		id := strings.Repeat("0", 8) + string(rune('a'+i%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i/676%26)) + "x"
		c.Fill(1, credential(id, "m", int64(i)), 0, nil)
		if got, _, _, ok := c.Find(1, id, 0); !ok || got.MemberID != int64(i) {
			t.Fatalf("credential %d: %+v, %v", i, got, ok)
		}
	}
	cred := credential("0123456789ab", "alice", 3)
	big := `{"OrderId":1,"certificate":{},"note":"` + strings.Repeat("x", credcache.MinBytes/512) + `"}`
	c.Fill(1, cred, 1, order(1, 3, big))
	if _, o, _, ok := c.Find(1, cred.KeyID, 1); ok {
		t.Fatalf("a %d-byte order in a %d-byte cache: %v", len(big), credcache.MinBytes, o != nil)
	}
}

// BenchmarkFindMiss is a look-up that finds the key but not the order:
// what a request whose order the cache does not hold pays before its read
// (once: the read that follows does not look again).
func BenchmarkFindMiss(b *testing.B) {
	c := credcache.New(credcache.DefaultBytes)
	defer c.Close()
	cred := credential("0123456789ab", "alice", 3)
	c.Fill(1, cred, 0, nil)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, _, miss, hit := c.Find(1, cred.KeyID, int64(1+i%100000)); hit || !miss.CredHit {
			b.Fatal("hit")
		}
	}
}
