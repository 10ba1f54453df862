package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/testdb"
	"github.com/certorder/certorder/server"
	"github.com/certorder/certorder/stores"
	"github.com/certorder/certorder/storetest"
)

var errorBody = regexp.MustCompile(`^\{"error_message":"Error\(\d+\) [a-zA-Z ]+\."\}\n$`)

// FuzzRequest sends the endpoint arbitrary bodies. Whatever comes, the
// answer is JSON: a success, or an error_message in the spec's form with a
// 4xx status; never a panic, a 5xx, or anything else.
func FuzzRequest(f *testing.F) {
	ctx := context.Background()
	s, err := stores.Open(ctx, testdb.SQLite(f))
	if err != nil {
		f.Fatal(err)
	}
	defer s.Close()
	if _, err := s.AddMember(ctx, "alice"); err != nil {
		f.Fatal(err)
	}
	key, k, _ := certorder.NewKey("")
	if err := s.AddKey(ctx, "alice", k); err != nil {
		f.Fatal(err)
	}
	if _, err := s.ImportOrders(ctx, "alice", storetest.Orders(f, storetest.OrderJSON(7, 8, "2030-01-01"), storetest.OrderJSON(8, 0, "2030-01-01"))); err != nil {
		f.Fatal(err)
	}
	h, err := server.New(s, server.Config{CASegment: "digicert"})
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{
		`{"AccessName":"alice","AccessKey":"` + key + `","action":"Auth"}`,
		`{"AccessName":"alice","AccessKey":"` + key + `","action":"OrderInfo","orderId":7}`,
		`{"AccessName":"alice","AccessKey":"` + key + `","action":"RenewCheck","orderId":"7"}`,
		`{"AccessName":"alice","AccessKey":"` + key + `","action":"RenewCheck","orderId":8}`,
		`{"AccessName":"alice","AccessKey":"cok_000000000000_x","action":"Auth"}`,
		`{"AccessName":"al\u0069ce","AccessKey":"` + key + `","action":"OrderInfo","orderId":1e1}`,
		`[]`, `{`, `{"a":{"b":[1,2,{"c":"}"}]}}`, "",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/api/digicert/", strings.NewReader(string(b))))
		body := w.Body.Bytes()
		switch {
		case w.Code == http.StatusOK:
			if !json.Valid(body) || strings.Contains(string(body), "error_message") {
				t.Fatalf("200 with %q", body)
			}
		case w.Code >= 400 && w.Code < 500:
			if !errorBody.Match(body) {
				t.Fatalf("%d with %q", w.Code, body)
			}
		default:
			t.Fatalf("status %d for %q: %q", w.Code, b, body)
		}
	})
}
