package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/wire"
)

// The hot path's bookkeeping trims, each beside what it replaced
// (docs/PERFORMANCE.md): go test -run '^$' -bench Trim -benchmem ./server

func BenchmarkTrimRequestID(b *testing.B) {
	b.Run("fmt", func(b *testing.B) {
		for b.Loop() {
			_ = fmt.Sprintf("%016x", rand.Uint64())
		}
	})
	b.Run("digits", func(b *testing.B) {
		for b.Loop() {
			_ = requestID()
		}
	})
}

func BenchmarkTrimMetrics(b *testing.B) {
	m := newMetrics(prometheus.NewRegistry())
	b.Run("WithLabelValues", func(b *testing.B) {
		for b.Loop() {
			m.requests.WithLabelValues("OrderInfo", wire.Code(0).Outcome()).Inc()
			m.latency.WithLabelValues("OrderInfo").Observe(0.0005)
		}
	})
	b.Run("handles", func(b *testing.B) {
		for b.Loop() {
			m.observe("OrderInfo", 0, 500*time.Microsecond)
		}
	})
}

func BenchmarkTrimStoreTimer(b *testing.B) {
	parent := context.Background()
	b.Run("WithTimeout", func(b *testing.B) {
		for b.Loop() {
			ctx, cancel := context.WithTimeout(parent, 5*time.Second)
			_ = ctx
			cancel()
		}
	})
	b.Run("none on a cache hit", func(b *testing.B) {
		for b.Loop() {
			_ = parent
		}
	})
}

func BenchmarkTrimBody(b *testing.B) {
	body := strings.Repeat("x", 140)
	b.Run("io.ReadAll", func(b *testing.B) {
		for b.Loop() {
			_, _ = io.ReadAll(strings.NewReader(body))
		}
	})
	b.Run("pooled", func(b *testing.B) {
		for b.Loop() {
			buf := bodyPool.Get().(*[]byte)
			*buf, _ = readAll(strings.NewReader(body), (*buf)[:0], DefaultMaxBodyBytes)
			putBody(buf)
		}
	})
}

func BenchmarkTrimAnswer(b *testing.B) {
	doc := []byte(`{"OrderId":1,"certificate":{"common_name":"a","valid_till":"2030-01-01"` + strings.Repeat(`,"x":"`+strings.Repeat("y", 100)+`"`, 12) + `},"status":"issued"}`)
	o := &certorder.Order{ID: 1, Doc: doc, CertEnd: bytes.Index(doc, []byte(`},"status"`)), Certificate: certorder.Certificate{ValidTill: "2030-01-01"}}
	c := &wire.Call{OrderID: 1, Order: o, Now: time.Now()}
	answer := wire.Actions["OrderInfo"].Answer
	b.Run("allocated", func(b *testing.B) {
		for b.Loop() {
			c.Buf = nil
			_, _ = answer(context.Background(), c)
		}
	})
	b.Run("pooled", func(b *testing.B) {
		for b.Loop() {
			pc := getCall(c.Now)
			pc.OrderID, pc.Order = c.OrderID, c.Order
			_, _ = answer(context.Background(), pc)
			putCall(pc)
		}
	})
}

func BenchmarkTrimDaysRemaining(b *testing.B) {
	now := time.Now()
	b.Run("time.Parse", func(b *testing.B) {
		for b.Loop() {
			till, _ := time.Parse(certorder.DateLayout, "2030-01-01")
			y, m, d := now.UTC().Date()
			_ = int(till.Sub(time.Date(y, m, d, 0, 0, 0, 0, time.UTC)).Hours()) / 24
		}
	})
	b.Run("civil days", func(b *testing.B) {
		for b.Loop() {
			_ = certorder.DaysRemaining("2030-01-01", now)
		}
	})
}

func BenchmarkTrimHeaders(b *testing.B) {
	h := http.Header{}
	b.Run("Set", func(b *testing.B) {
		for b.Loop() {
			h.Set("Content-Type", "application/json")
			h.Set("Cache-Control", "no-store")
			h.Set("X-Content-Type-Options", "nosniff")
		}
	})
	b.Run("assigned", func(b *testing.B) {
		for b.Loop() {
			h["Content-Type"] = contentTypeJSON
			h["Cache-Control"] = noStore
			h["X-Content-Type-Options"] = noSniff
		}
	})
}

func BenchmarkTrimClientIP(b *testing.B) {
	r := &http.Request{RemoteAddr: "198.51.100.7:51234"}
	b.Run("String", func(b *testing.B) {
		for b.Loop() {
			a, _ := peerAddr(r)
			_ = a.String()
		}
	})
	b.Run("as written", func(b *testing.B) {
		for b.Loop() {
			_ = clientIP(r, nil)
		}
	})
}
