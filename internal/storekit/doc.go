package storekit

import (
	"fmt"

	"github.com/certorder/certorder"
	"github.com/klauspost/compress/s2"
)

// Compressed marks, in a row's doc_format, a document stored compressed
// with S2: the format is certorder.DocFormat|Compressed (257), so that
// the layout's version (certorder.DocFormat) and the compression are told
// apart, and a binary that does not know the compression refuses the row
// rather than answer it wrong.
const Compressed = 1 << 8

// PackDoc is a document as SQLite writes it, with its doc_format. An
// import's time follows the pages it writes (docs/PERFORMANCE.md), and
// an order's row was two thirds document: compressed, loadbench's order
// of 1,281 bytes takes 835 and a page holds three rows instead of two
// (a store of 10,000 orders: 3,890 pages instead of 5,559; an import of
// 200,000 1.08x as fast, S2 taking 2.7 µs an order of it). zstd
// at its fastest made it 689 bytes, at four times S2's time to compress
// and to decompress; a miss of the cache decompresses one.
func PackDoc(doc []byte) ([]byte, int64) {
	return s2.Encode(nil, doc), certorder.DocFormat | Compressed
}

// Document is a stored document as it was imported; kind and id name the
// row in its errors ("order", 7). A row of another format than this
// binary's is refused rather than answered wrong.
func Document(kind string, id int64, doc []byte, format int64) ([]byte, error) {
	if format&^Compressed != certorder.DocFormat {
		return nil, fmt.Errorf("%s %d is stored in document format %d; this binary reads %d", kind, id, format, certorder.DocFormat)
	}
	if format&Compressed == 0 {
		return doc, nil
	}
	// Decode allocates the length the header claims before it reads the
	// rest: bounded first, so that a damaged row cannot cost gigabytes.
	var d []byte
	n, err := s2.DecodedLen(doc)
	if err == nil && n > certorder.MaxOrderBytes {
		err = fmt.Errorf("%w: %d bytes", s2.ErrTooLarge, n)
	}
	if err == nil {
		d, err = s2.Decode(nil, doc)
	}
	if err != nil {
		return nil, fmt.Errorf("%s %d: stored document: %w", kind, id, err)
	}
	return d, nil
}
