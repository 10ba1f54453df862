package credcache

import (
	"context"
	"encoding/binary"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/storekit"
)

// Certificates is a storekit.CertificateFinder in front of another,
// beside Store and in its cache: a member's look-up of one serial number
// or thumbprint (CertificateCheck's) is answered from memory when the
// cache holds it for the source's current generation, and otherwise read
// within the timeout and cached, found or not. The generation moves with
// every change to a history as with one to an order (sqlite: any commit;
// postgres: the histories' notification, migration 0019), so an answer a
// reissue, a revocation or a new history entry made stale is never
// served. Other look-ups (the operator's, several keys) read the finder.
type Certificates struct {
	finder storekit.CertificateFinder
	s      *Store
}

// Certificates puts s's cache in front of finder (the same store's: the
// source keeps it exact); without a cache, every look-up reads finder
// within the timeout.
func (s *Store) Certificates(finder storekit.CertificateFinder) *Certificates {
	return &Certificates{finder: finder, s: s}
}

// FindCertificates returns what finder's FindCertificates returns for q.
func (c *Certificates) FindCertificates(ctx context.Context, q certorder.CertificateQuery) ([]certorder.CertificateMatch, error) {
	if k, ok := certificateKeyOf(q); ok && c.s.cache != nil {
		if gen, ok := c.s.src.Generation(); ok {
			return c.s.cache.findCertificates(ctx, gen, k, q, c.read)
		}
	}
	return c.read(ctx, q)
}

func (c *Certificates) read(ctx context.Context, q certorder.CertificateQuery) ([]certorder.CertificateMatch, error) {
	ctx, cancel := context.WithTimeout(ctx, c.s.timeout)
	defer cancel()
	return c.finder.FindCertificates(ctx, q)
}

var _ storekit.CertificateFinder = (*Certificates)(nil)

// certificateKey is a member's look-up of one key: the arena's key less
// the generation. The key is a look-up form (40 hex digits at most).
type certificateKey struct {
	member     int64
	thumbprint bool
	key        string
}

// certificateKeyOf is q's key when q is a member's look-up of one key no
// longer than certorder's look-up forms are.
func certificateKeyOf(q certorder.CertificateQuery) (certificateKey, bool) {
	switch {
	case q.MemberID == 0 || len(q.Serials)+len(q.Thumbprints) != 1:
		return certificateKey{}, false
	case len(q.Serials) == 1:
		return certificateKey{member: q.MemberID, key: q.Serials[0]}, len(q.Serials[0]) <= certorder.MaxSerialDigits
	}
	return certificateKey{member: q.MemberID, thumbprint: true, key: q.Thumbprints[0]}, len(q.Thumbprints[0]) <= certorder.ThumbprintDigits
}

// certKind starts the arena's key of a certificate look-up; then the
// generation, the member, 't' for a thumbprint or 's' for a serial, and
// the key.
const certKind = 'x'

func (k certificateKey) arenaKey(b []byte, gen uint64) []byte {
	b = append(b, certKind)
	b = binary.LittleEndian.AppendUint64(b, gen)
	b = binary.LittleEndian.AppendUint64(b, uint64(k.member))
	kind := byte('s')
	if k.thumbprint {
		kind = 't'
	}
	return append(append(b, kind), k.key...)
}

// findCertificates answers k from the cache of generation gen, or reads it
// with read and fills the cache.
func (c *Cache) findCertificates(ctx context.Context, gen uint64, k certificateKey, q certorder.CertificateQuery,
	read func(context.Context, certorder.CertificateQuery) ([]certorder.CertificateMatch, error)) ([]certorder.CertificateMatch, error) {
	var kb [1 + 8 + 8 + 1 + certorder.MaxSerialDigits]byte
	ak := k.arenaKey(kb[:0], gen)
	scratch := scratchPool.Get().(*[]byte)
	defer scratchPool.Put(scratch)
	if v, ok := c.a.get((*scratch)[:0], ak); ok {
		if ms, ok := decodeMatches(v); ok {
			c.hits.Add(1)
			return ms, nil
		}
	}
	c.misses.Add(1)
	ms, err := read(ctx, q)
	if err != nil {
		return nil, err
	}
	if v := appendMatches((*scratch)[:0], ms); len(v) <= c.maxEntry {
		c.a.set(ak, v)
		if cap(v) <= 64<<10 {
			*scratch = v[:0]
		}
	}
	return ms, nil
}

// A look-up's value: the number of matches, then each match's numbers
// (order, seq, certificate ID, member; uvarints), whether it is current,
// and its texts, each its length and bytes, the DNS names last (their
// number, then each).
func appendMatches(b []byte, ms []certorder.CertificateMatch) []byte {
	b = binary.AppendUvarint(b, uint64(len(ms)))
	for i := range ms {
		m := &ms[i]
		for _, n := range [...]int64{m.OrderID, m.Seq, m.ID, m.MemberID} {
			b = binary.AppendUvarint(b, uint64(n))
		}
		current := byte(0)
		if m.Current {
			current = 1
		}
		b = append(b, current)
		for _, s := range matchTexts(m) {
			b = appendText(b, *s)
		}
		b = binary.AppendUvarint(b, uint64(len(m.DNSNames)))
		for _, s := range m.DNSNames {
			b = appendText(b, s)
		}
	}
	return b
}

// matchTexts are a match's texts, in the order of its value.
func matchTexts(m *certorder.CertificateMatch) [9]*string {
	return [...]*string{&m.SerialNumber, &m.Thumbprint, &m.CommonName, &m.Status, &m.DateIssued, &m.ValidFrom, &m.ValidTill,
		&m.Member, &m.OrderStatus}
}

func appendText(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// decodeMatches reads a look-up's value into matches of their own (their
// texts in one new string: v is the arena's scratch).
func decodeMatches(v []byte) ([]certorder.CertificateMatch, bool) {
	d := decoder{b: v}
	n := d.uvarint()
	if d.bad || n > uint64(len(v)) {
		return nil, false
	}
	all := string(v) // the texts, sliced from one copy
	ms := make([]certorder.CertificateMatch, 0, n)
	for range n {
		var m certorder.CertificateMatch
		for _, p := range [...]*int64{&m.OrderID, &m.Seq, &m.ID, &m.MemberID} {
			*p = int64(d.uvarint())
		}
		m.Current = d.byte() == 1
		for _, p := range matchTexts(&m) {
			*p = d.text(all)
		}
		if names := d.uvarint(); names > 0 && names <= uint64(len(v)) {
			m.DNSNames = make([]string, names)
			for i := range m.DNSNames {
				m.DNSNames[i] = d.text(all)
			}
		}
		if d.bad {
			return nil, false
		}
		ms = append(ms, m)
	}
	return ms, !d.bad && d.at == len(v)
}

// decoder reads a value, noting (bad) a read past its end.
type decoder struct {
	b   []byte
	at  int
	bad bool
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b[d.at:])
	if n <= 0 {
		d.bad = true
		return 0
	}
	d.at += n
	return v
}

func (d *decoder) byte() byte {
	if d.at >= len(d.b) {
		d.bad = true
		return 0
	}
	d.at++
	return d.b[d.at-1]
}

// text is the next text, a slice of all (a copy of d.b).
func (d *decoder) text(all string) string {
	n := d.uvarint()
	if d.bad || n > uint64(len(d.b)-d.at) {
		d.bad = true
		return ""
	}
	s := all[d.at : d.at+int(n)]
	d.at += int(n)
	return s
}
