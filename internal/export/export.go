// Package export is the store's export format, JSON lines (Write, Read),
// and the rules every store follows to restore one (Restorer). It imports
// the root package, internal/orderdoc, internal/inorder, notice (the rules
// of a notice address) and the standard library.
package export

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"strconv"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/inorder"
	"github.com/certorder/certorder/internal/orderdoc"
	"github.com/certorder/certorder/internal/storekit"
	"github.com/certorder/certorder/notice"
)

// line is one JSON line of an export file.
type line struct {
	Type      string     `json:"type"` // member, key, link, order, endpoint or notice
	Name      string     `json:"name,omitempty"`
	Member    string     `json:"member,omitempty"`
	Container int64      `json:"container,omitempty"`
	Disabled  bool       `json:"disabled,omitempty"`
	KeysOff   bool       `json:"self_service_keys_off,omitempty"`
	KeyID     string     `json:"key_id,omitempty"`
	Label     string     `json:"label,omitempty"`
	Hash      []byte     `json:"hash,omitempty"`
	CreatedAt *time.Time `json:"created_at,omitempty"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
	OrderID   int64      `json:"order_id,omitempty"`
	RenewedBy int64      `json:"renewed_by,omitempty"`
	// An order's certificate history, oldest first, before its document.
	Certificates []certorder.Certificate `json:"certificates,omitempty"`
	Doc          json.RawMessage         `json:"doc,omitempty"`

	// A webhook endpoint: its URL, event types, signing secrets as stored
	// (signing needs them), its state.
	URL             string     `json:"url,omitempty"`
	EventTypes      []string   `json:"event_types,omitempty"`
	Secret          string     `json:"secret,omitempty"`
	PreviousSecret  string     `json:"previous_secret,omitempty"`
	PreviousExpires *time.Time `json:"previous_expires,omitempty"`
	EndpointOff     bool       `json:"endpoint_disabled,omitempty"`
	DisabledReason  string     `json:"disabled_reason,omitempty"`
	Format          string     `json:"format,omitempty"` // absent: standard

	// A notice address (EventTypes and Secret above): its address,
	// language and state; its messages are not exported.
	Address        string     `json:"address,omitempty"`
	Lang           string     `json:"lang,omitempty"`
	ConfirmedAt    *time.Time `json:"confirmed_at,omitempty"`
	UnsubscribedAt *time.Time `json:"unsubscribed_at,omitempty"`
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

// Exporter is what Write reads.
type Exporter interface {
	Members(ctx context.Context) ([]certorder.Member, error)
	Keys(ctx context.Context, member string) ([]certorder.Key, error)
	ContainerLinks(ctx context.Context) ([]certorder.ContainerLink, error)
	ListOrders(ctx context.Context, q certorder.OrderQuery) ([]*certorder.Order, error)
	Certificates(ctx context.Context, ids []int64) (map[int64][]certorder.CertificateEntry, error)
	Endpoints(ctx context.Context, member string) ([]certorder.Endpoint, error)
	NoticeAddresses(ctx context.Context, memberID int64) ([]certorder.NoticeAddress, error)
}

// batch is how many orders Export reads at a time: its memory is
// flat in the number of orders.
const batch = 1000

// Write writes every member, key (its hash, never a secret), division
// link, order with its renewal and certificate history, and webhook
// endpoint of the store as JSON lines:
// members first, then keys, links, orders and endpoints. Documents are
// written byte for byte as stored. An endpoint's signing secrets are
// written as stored (the store keeps them to sign with), so the export is
// as sensitive as the database. The sync's state, unassigned orders and
// the webhook outbox (events and deliveries) are not exported: a sync
// after a restore lists everything again.
func Write(ctx context.Context, s Exporter, w io.Writer) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	members, err := s.Members(ctx)
	if err != nil {
		return err
	}
	for _, m := range members {
		if err := enc.Encode(line{Type: "member", Name: m.Name, Disabled: m.Disabled, KeysOff: m.SelfServiceKeysOff,
			CreatedAt: timePtr(m.CreatedAt)}); err != nil {
			return err
		}
	}
	for _, m := range members {
		keys, err := s.Keys(ctx, m.Name)
		if err != nil {
			return err
		}
		for _, k := range keys {
			if err := enc.Encode(line{Type: "key", Member: m.Name, KeyID: k.ID, Label: k.Label, Hash: k.Hash,
				CreatedAt: timePtr(k.CreatedAt), RevokedAt: timePtr(k.RevokedAt)}); err != nil {
				return err
			}
		}
	}
	links, err := s.ContainerLinks(ctx)
	if err != nil {
		return err
	}
	for _, l := range links {
		if err := enc.Encode(line{Type: "link", Member: l.Member, Container: l.Container, CreatedAt: timePtr(l.CreatedAt)}); err != nil {
			return err
		}
	}
	for _, m := range members {
		q := certorder.OrderQuery{MemberID: m.ID, Limit: batch}
		for {
			orders, err := s.ListOrders(ctx, q)
			if err != nil {
				return err
			}
			ids := make([]int64, len(orders))
			for i, o := range orders {
				ids[i] = o.ID
			}
			histories, err := s.Certificates(ctx, ids)
			if err != nil {
				return err
			}
			for _, o := range orders {
				var certs []certorder.Certificate
				for _, e := range histories[o.ID] {
					certs = append(certs, e.Certificate)
				}
				if err := enc.Encode(line{Type: "order", Member: m.Name, OrderID: o.ID, RenewedBy: o.RenewedBy,
					Certificates: certs, Doc: o.Doc}); err != nil {
					return err
				}
			}
			if len(orders) < batch {
				break
			}
			q.AfterID = orders[len(orders)-1].ID
		}
	}
	for _, m := range members {
		eps, err := s.Endpoints(ctx, m.Name)
		if err != nil {
			return err
		}
		for _, e := range eps {
			format := e.Format
			if format == certorder.FormatStandard {
				format = "" // as written before formats
			}
			if err := enc.Encode(line{Type: "endpoint", Member: m.Name, URL: e.URL, EventTypes: e.EventTypes,
				Secret: e.Secret, PreviousSecret: e.PreviousSecret, PreviousExpires: timePtr(e.PreviousExpires),
				EndpointOff: !e.Enabled, DisabledReason: e.DisabledReason, CreatedAt: timePtr(e.CreatedAt), Format: format}); err != nil {
				return err
			}
		}
		addrs, err := s.NoticeAddresses(ctx, m.ID)
		if err != nil {
			return err
		}
		for _, a := range addrs {
			if err := enc.Encode(line{Type: "notice", Member: m.Name, Address: a.Address, Lang: a.Lang, EventTypes: a.EventTypes,
				Secret: a.Secret, CreatedAt: timePtr(a.CreatedAt), ConfirmedAt: timePtr(a.ConfirmedAt),
				UnsubscribedAt: timePtr(a.UnsubscribedAt)}); err != nil {
				return err
			}
		}
	}
	return bw.Flush()
}

// Read reads what Write wrote, one record a line. After the first
// error it yields nothing more; errors wrap certorder.ErrInvalid and name the line.
func Read(r io.Reader) iter.Seq2[storekit.Record, error] {
	return func(yield func(storekit.Record, error) bool) {
		// Lines are read in a goroutine and parsed by a few (an order
		// line is an order to check), in the file's order.
		type item struct {
			line    []byte
			rec     storekit.Record
			err     error
			scanErr bool // err is the reader's, not a line's
		}
		n := 0
		inorder.Run(func(emit func(item) bool) {
			sc := bufio.NewScanner(r)
			sc.Buffer(make([]byte, 64<<10), 64<<20)
			for sc.Scan() {
				if !emit(item{line: bytes.Clone(sc.Bytes())}) {
					return
				}
			}
			if err := sc.Err(); err != nil {
				emit(item{err: err, scanErr: true})
			}
		}, func(it item) item {
			if !it.scanErr {
				it.rec, it.err = parseLine(it.line)
				it.line = nil
			}
			return it
		}, func(it item) bool {
			n++
			switch {
			case it.scanErr:
				yield(storekit.Record{}, fmt.Errorf("%w: %v", certorder.ErrInvalid, it.err))
				return false
			case it.err != nil:
				yield(storekit.Record{}, fmt.Errorf("%w: line %d: %v", certorder.ErrInvalid, n, it.err))
				return false
			}
			return yield(it.rec, nil)
		})
	}
}

func parseLine(b []byte) (storekit.Record, error) {
	if rec, ok := parseOrderLine(b); ok {
		return rec, nil
	}
	return decodeLine(b)
}

// decodeLine is parseLine's general path: any line encoding/json reads.
func decodeLine(b []byte) (storekit.Record, error) {
	var l line
	if err := json.Unmarshal(b, &l); err != nil {
		return storekit.Record{}, err
	}
	var zero time.Time
	deref := func(t *time.Time) time.Time {
		if t == nil {
			return zero
		}
		return *t
	}
	switch l.Type {
	case "member":
		if err := certorder.ValidMemberName(l.Name); err != nil {
			return storekit.Record{}, err
		}
		return storekit.Record{Member: &certorder.Member{Name: l.Name, Disabled: l.Disabled, SelfServiceKeysOff: l.KeysOff,
			CreatedAt: deref(l.CreatedAt)}}, nil
	case "key":
		if _, ok := certorder.KeyID(certorder.KeyPrefix + l.KeyID + "_x"); !ok || len(l.Hash) != 32 || l.Member == "" {
			return storekit.Record{}, errors.New("a key needs key_id, member and a 32-byte hash")
		}
		return storekit.Record{Key: &certorder.Key{ID: l.KeyID, Member: l.Member, Label: l.Label, Hash: l.Hash,
			CreatedAt: deref(l.CreatedAt), RevokedAt: deref(l.RevokedAt)}}, nil
	case "link":
		if l.Member == "" || l.Container <= 0 {
			return storekit.Record{}, errors.New("a link needs member and a positive container")
		}
		return storekit.Record{Link: &certorder.ContainerLink{Member: l.Member, Container: l.Container, CreatedAt: deref(l.CreatedAt)}}, nil
	case "endpoint":
		if l.Member == "" || l.URL == "" || l.Secret == "" {
			return storekit.Record{}, errors.New("an endpoint needs member, url and secret")
		}
		return storekit.Record{Endpoint: &certorder.Endpoint{Member: l.Member, URL: l.URL, EventTypes: l.EventTypes, Secret: l.Secret,
			PreviousSecret: l.PreviousSecret, PreviousExpires: deref(l.PreviousExpires), Enabled: !l.EndpointOff,
			DisabledReason: l.DisabledReason, CreatedAt: deref(l.CreatedAt), Format: certorder.EndpointFormat(l.Format)}}, nil
	case "notice":
		if l.Member == "" || l.Address == "" || l.Lang == "" || l.Secret == "" {
			return storekit.Record{}, errors.New("a notice address needs member, address, lang and secret")
		}
		// Checked as admin notice add checks a new one: a restored address
		// is mailed and its links are signed with its secret.
		a, err := notice.NewAddress(l.Address, l.Lang, l.EventTypes)
		if err == nil {
			err = notice.CheckSecret(l.Secret)
		}
		if err != nil {
			return storekit.Record{}, err
		}
		a.Member, a.Secret = l.Member, l.Secret
		a.CreatedAt, a.ConfirmedAt, a.UnsubscribedAt = deref(l.CreatedAt), deref(l.ConfirmedAt), deref(l.UnsubscribedAt)
		return storekit.Record{Notice: &a}, nil
	case "order":
		return orderRecord(l.Member, l.OrderID, l.RenewedBy, l.Certificates, l.Doc)
	}
	return storekit.Record{}, fmt.Errorf("unknown type %q", l.Type)
}

func orderRecord(member string, orderID, renewedBy int64, history []certorder.Certificate, doc []byte) (storekit.Record, error) {
	o, err := orderdoc.Parse(doc)
	if err != nil {
		return storekit.Record{}, err
	}
	if o.ID != orderID || member == "" || renewedBy < 0 || renewedBy == o.ID {
		return storekit.Record{}, errors.New("an order needs member, order_id matching its document, and a sound renewed_by")
	}
	o.Member, o.RenewedBy = member, renewedBy
	return storekit.Record{Order: o, History: history}, nil
}

// parseOrderLine reads an order line exactly as Write writes it,
// {"type":"order","member":"M","order_id":N[,"renewed_by":R][,"certificates":[...]],"doc":{...}},
// without encoding/json: decoding the line before ParseOrder read the
// document again was a third of a restore's parsing (200,000 orders:
// json.Unmarshal 4.2 s of CPU, ParseOrder 8.0 s). It answers ok only when
// the line is in that form and the order is sound, and then with what
// json.Unmarshal and the checks of parseLine give: the fixed parts are
// matched byte for byte, the member is plain ASCII, the numbers plain
// digits, the history an array encoding/json reads (a small part of the
// line), and ParseOrder has found the document a valid JSON object, so the
// line is valid JSON with exactly those members. Anything else (another
// form, an error to report) is left to parseLine's general path.
func parseOrderLine(b []byte) (rec storekit.Record, ok bool) {
	rest, ok := bytes.CutPrefix(b, []byte(`{"type":"order","member":"`))
	if !ok {
		return rec, false
	}
	end := bytes.IndexByte(rest, '"')
	if end <= 0 {
		return rec, false
	}
	for _, c := range rest[:end] {
		if c < 0x20 || c >= 0x7f || c == '\\' {
			return rec, false
		}
	}
	member := string(rest[:end])
	if rest, ok = bytes.CutPrefix(rest[end:], []byte(`","order_id":`)); !ok {
		return rec, false
	}
	orderID, rest, ok := lineNumber(rest)
	if !ok {
		return rec, false
	}
	var renewedBy int64
	if r, found := bytes.CutPrefix(rest, []byte(`,"renewed_by":`)); found {
		if renewedBy, rest, ok = lineNumber(r); !ok {
			return rec, false
		}
	}
	var history []certorder.Certificate
	if r, found := bytes.CutPrefix(rest, []byte(`,"certificates":`)); found {
		dec := json.NewDecoder(bytes.NewReader(r))
		if dec.Decode(&history) != nil {
			return rec, false
		}
		rest = r[dec.InputOffset():]
	}
	doc, ok := bytes.CutPrefix(rest, []byte(`,"doc":{`))
	if !ok || len(doc) < 2 || doc[len(doc)-1] != '}' || doc[len(doc)-2] != '}' {
		return rec, false
	}
	doc = rest[len(`,"doc":`) : len(rest)-1]
	rec, err := orderRecord(member, orderID, renewedBy, history, doc)
	return rec, err == nil
}

// lineNumber reads the positive integer at the start of b as encoding/json
// writes one (digits, no leading zero), and what follows it.
func lineNumber(b []byte) (int64, []byte, bool) {
	i := 0
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	if i == 0 || i > 18 || b[0] == '0' {
		return 0, nil, false
	}
	n, _ := strconv.ParseInt(string(b[:i]), 10, 64)
	return n, b[i:], true
}
