// Package ordertest makes order documents for tests: whatever the
// import accepts, in every variation the spec allows.
package ordertest

import (
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/orderdoc"
)

// RandomDocument makes an order document that the import accepts, with
// every field the spec types present or absent at random and, when present,
// in one of the variations allowed: for property tests that feed whatever
// the import accepts to its readers.
func RandomDocument(r *rand.Rand, id int64) []byte {
	schema := orderdoc.Schema()
	order := randomObject(r, schema)
	cert := randomObject(r, schema["certificate"].Fields)
	cert["valid_till"] = json.RawMessage(`"` + time.Date(2020+r.IntN(15), time.Month(1+r.IntN(12)), 1+r.IntN(28), 0, 0, 0, 0, time.UTC).Format(certorder.DateLayout) + `"`)
	order["certificate"] = marshalObject(cert)
	order["OrderId"] = json.RawMessage(strconv.FormatInt(id, 10))
	b, _ := json.Marshal(order)
	return b
}

func randomObject(r *rand.Rand, schema map[string]orderdoc.FieldType) map[string]json.RawMessage {
	obj := map[string]json.RawMessage{}
	for name, rl := range schema {
		if r.IntN(4) == 0 || name == "certificate" {
			continue // absent
		}
		obj[name] = random(r, rl)
	}
	return obj
}

func marshalObject(obj map[string]json.RawMessage) json.RawMessage {
	b, _ := json.Marshal(obj)
	return b
}

// random is a value of the type, in one of the variations the spec allows.
func random(r *rand.Rand, rl orderdoc.FieldType) json.RawMessage {
	pick := func(vs ...string) json.RawMessage { return json.RawMessage(vs[r.IntN(len(vs))]) }
	switch rl.Kind {
	case "string":
		return pick(`""`, `"issued"`, `"<b>&amp;</b> \"quoted\""`, `"é日本語\u2028"`, `"-----BEGIN CSR-----\nMIIB\n-----END CSR-----"`)
	case "string-or-number":
		return pick(`"42"`, `42`, `-7`, `4.5e3`, `"abc"`)
	case "int":
		return pick(`0`, `-1`, `2048`, `9223372036854775807`, `-9223372036854775808`)
	case "int-or-digits":
		return pick(`5`, `"5"`, `"000"`, `"9223372036854775807"`)
	case "count":
		return pick(`1`, `"2"`, `null`, `0`)
	case "int-or-null":
		return pick(`1`, `null`, `0`)
	case "bool":
		return pick(`true`, `false`)
	case "date":
		return pick(`"2030-01-01"`, `"1999-12-31"`, `"2024-02-29"`)
	case "date-time":
		return pick(`"2026-11-21T08:00:00+09:00"`, `"2026-01-01T00:00:00Z"`, `"2026-01-01T00:00:00.123456789-05:30"`)
	case "names":
		return pick(`[]`, `["a.example.com"]`, `["a.example.com","*.b.example.com"]`)
	case "object":
		if rl.Fields == nil {
			return pick(`{}`, `{"any":[1,"x",null]}`)
		}
		return marshalObject(randomObject(r, rl.Fields))
	}
	panic("ordertest: a kind of field it does not know: " + rl.Kind)
}
