// Package auditseg is the audit trail's storage format, which both stores
// share: a batch of entries encoded as one segment, the query, pruning and
// bounds read from stored segments, and when each key was last used
// (LastUses). It imports the root package and the standard library.
package auditseg

import (
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"slices"
	"time"

	"github.com/certorder/certorder"
)

// The audit trail is stored in segments: each batch the server's writer
// flushes is one row holding its entries encoded together, with the time
// of its oldest and newest entry. Writing a request's entry is then an
// append to a buffer, not a row with its indexes; the only index is one
// entry per segment, on its time. Queries decode the segments their time
// range touches (Query does the filtering, once for every store).
//
// A segment is the version byte, then per entry: the time in microseconds
// as a zigzag varint delta from the previous entry's, member, key ID,
// action and client IP as length-prefixed bytes, the order number, the
// outcome and the count as varints.
const version = 1

// Encode encodes entries, trimmed (see certorder.AuditEntry.Trimmed), as one
// segment, and returns the time of the oldest and the newest, to the
// microsecond as the stores keep times.
func Encode(entries []certorder.AuditEntry) (seg []byte, oldest, newest time.Time) {
	seg = make([]byte, 1, 1+len(entries)*48)
	seg[0] = version
	var prev, lo, hi int64
	for i, e := range entries {
		e = e.Trimmed()
		at := e.Time.UnixMicro()
		if i == 0 || at < lo {
			lo = at
		}
		if i == 0 || at > hi {
			hi = at
		}
		seg = binary.AppendVarint(seg, at-prev)
		prev = at
		seg = appendText(seg, e.Member)
		seg = appendText(seg, e.KeyID)
		seg = appendText(seg, e.Action)
		seg = appendText(seg, e.ClientIP)
		seg = binary.AppendVarint(seg, e.OrderID)
		seg = binary.AppendVarint(seg, int64(e.Outcome))
		seg = binary.AppendUvarint(seg, uint64(max(e.Count, 1)))
	}
	return seg, time.UnixMicro(lo).UTC(), time.UnixMicro(hi).UTC()
}

// LastUses is, for each key that authenticated a call in entries, the
// latest such call: what a store records beside the entries.
func LastUses(entries []certorder.AuditEntry) map[string]time.Time {
	last := map[string]time.Time{}
	for _, e := range entries {
		if e.KeyID != "" && e.Time.After(last[e.KeyID]) {
			last[e.KeyID] = e.Time
		}
	}
	return last
}

func appendText(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// errSegment is a segment that does not decode: a bug or a damaged file.
var errSegment = errors.New("audit segment does not decode")

// Decode returns the entries of a segment, in the order they
// were written.
func Decode(seg []byte) ([]certorder.AuditEntry, error) {
	var es []certorder.AuditEntry
	for e, err := range entries(seg) {
		if err != nil {
			return nil, err
		}
		es = append(es, e)
	}
	return es, nil
}

func entries(seg []byte) iter.Seq2[certorder.AuditEntry, error] {
	return func(yield func(certorder.AuditEntry, error) bool) {
		if len(seg) == 0 || seg[0] != version {
			yield(certorder.AuditEntry{}, fmt.Errorf("%w: unknown version", errSegment))
			return
		}
		d := segmentDecoder{b: seg[1:]}
		var at int64
		for len(d.b) > 0 && d.err == nil {
			at += d.varint()
			e := certorder.AuditEntry{Member: d.text(), KeyID: d.text(), Action: d.text(), ClientIP: d.text()}
			e.OrderID, e.Outcome, e.Count = d.varint(), int(d.varint()), int(d.uvarint())
			e.Time = time.UnixMicro(at).UTC()
			if d.err != nil {
				break
			}
			if !yield(e, nil) {
				return
			}
		}
		if d.err != nil {
			yield(certorder.AuditEntry{}, d.err)
		}
	}
}

type segmentDecoder struct {
	b   []byte
	err error
}

func (d *segmentDecoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err, d.b = errSegment, nil
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *segmentDecoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err, d.b = errSegment, nil
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *segmentDecoder) text() string {
	n := d.uvarint()
	if d.err != nil || n > uint64(len(d.b)) {
		d.err, d.b = errSegment, nil
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

// Query answers an audit query from stored segments (oldest
// segment first, as written) and, before them, entries of the older
// one-row-per-entry table a store may still hold: it decodes, filters,
// and returns the entries newest first, ties broken by the order they were
// written (the later first). Memory stays within twice the limit.
func Query(q certorder.AuditQuery, legacy []certorder.AuditEntry, segments iter.Seq2[[]byte, error]) ([]certorder.AuditEntry, error) {
	type ranked struct {
		e   certorder.AuditEntry
		seq int
	}
	var out []ranked
	newestFirst := func(a, b ranked) int {
		if c := b.e.Time.Compare(a.e.Time); c != 0 {
			return c
		}
		return b.seq - a.seq
	}
	trim := func() {
		if q.Limit > 0 && len(out) > 2*q.Limit {
			slices.SortFunc(out, newestFirst)
			out = out[:q.Limit]
		}
	}
	seq := 0
	keep := func(e certorder.AuditEntry) {
		seq++
		if (q.Member == "" || e.Member == q.Member) && !e.Time.Before(q.Since) {
			out = append(out, ranked{e, seq})
			trim()
		}
	}
	// legacy comes newest first, as its query sorts it.
	for i := len(legacy) - 1; i >= 0; i-- {
		keep(legacy[i])
	}
	for seg, err := range segments {
		if err != nil {
			return nil, err
		}
		for e, err := range entries(seg) {
			if err != nil {
				return nil, err
			}
			keep(e)
		}
	}
	slices.SortFunc(out, newestFirst)
	if q.Limit > 0 && len(out) > q.Limit {
		out = out[:q.Limit]
	}
	es := make([]certorder.AuditEntry, len(out))
	for i, r := range out {
		es[i] = r.e
	}
	return es, nil
}

// Prune drops from a segment the entries older than before,
// and says how many it dropped; nil when none is left.
func Prune(seg []byte, before time.Time) (kept []byte, dropped int, err error) {
	es, err := Decode(seg)
	if err != nil {
		return nil, 0, err
	}
	left := slices.DeleteFunc(es, func(e certorder.AuditEntry) bool { return e.Time.Before(before) })
	dropped = len(es) - len(left)
	if len(left) == 0 {
		return nil, dropped, nil
	}
	kept, _, _ = Encode(left)
	return kept, dropped, nil
}

// CeilMicro is t in Unix microseconds, rounded up: an audit entry stored at
// microsecond m is at or after t exactly when m >= CeilMicro(t).
func CeilMicro(t time.Time) int64 {
	m := t.UnixMicro()
	if time.UnixMicro(m).Before(t) {
		m++
	}
	return m
}

// Bounds is the time of the oldest and the newest entry of a segment.
func Bounds(seg []byte) (oldest, newest time.Time, err error) {
	es, err := Decode(seg)
	for i, e := range es {
		if i == 0 || e.Time.Before(oldest) {
			oldest = e.Time
		}
		if i == 0 || e.Time.After(newest) {
			newest = e.Time
		}
	}
	return oldest, newest, err
}

// Rows is what a store's query result offers (database/sql's *Rows and
// pgx's Rows both do).
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// Data yields the one column, a segment's data, of each row, for
// Query.
func Data(rows Rows) iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		for rows.Next() {
			var data []byte
			if err := rows.Scan(&data); err != nil {
				yield(nil, err)
				return
			}
			if !yield(data, nil) {
				return
			}
		}
		if err := rows.Err(); err != nil {
			yield(nil, err)
		}
	}
}
