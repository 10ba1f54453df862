package storekit

import (
	"bytes"
	"strings"
	"testing"

	"github.com/certorder/certorder"
)

// A document comes back from its stored form as it went in; a row of
// the plain format reads as it is; any other format, or a compressed
// document that does not decompress, is refused with the row named.
func TestDocument(t *testing.T) {
	doc := []byte(`{"OrderId":7,"certificate":{"common_name":"host.example.com","dns_names":["host.example.com","www.host.example.com"]},"status":"issued"}`)
	packed, format := PackDoc(doc)
	if format != certorder.DocFormat|Compressed || len(packed) >= len(doc) {
		t.Fatalf("PackDoc: format %d, %d bytes of %d", format, len(packed), len(doc))
	}
	for _, tc := range []struct {
		stored []byte
		format int64
	}{{packed, format}, {doc, certorder.DocFormat}} {
		got, err := Document("order", 7, tc.stored, tc.format)
		if err != nil || !bytes.Equal(got, doc) {
			t.Errorf("format %d: %q, %v", tc.format, got, err)
		}
	}
	for _, tc := range []struct {
		stored []byte
		format int64
		want   string
	}{
		{doc, 0, "order 7 is stored in document format 0; this binary reads 1"},
		{doc, certorder.DocFormat + 1, "order 7 is stored in document format 2"},
		{packed, (certorder.DocFormat + 1) | Compressed, "order 7 is stored in document format 258"},
		{doc, format, "order 7: stored document:"},
		{packed[:len(packed)/2], format, "order 7: stored document:"},
		// A header that claims 4 GiB is refused before anything is allocated.
		{append([]byte{0xff, 0xff, 0xff, 0xff, 0x0f}, packed[1:]...), format, "order 7: stored document: s2: decoded block is too large: 4294967295 bytes"},
	} {
		if _, err := Document("order", 7, tc.stored, tc.format); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("format %d, %d bytes: %v, want %q", tc.format, len(tc.stored), err, tc.want)
		}
	}
}
