package acmegate

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/certorder/certorder/client"
)

// members is a member API with the chains 1 -> 2 (pending), 3 -> 4
// (canceled) and 5, in the spec's answers.
func members(t *testing.T) *client.Client {
	renewed := map[int64]int64{1: 2, 3: 4}
	status := map[int64]string{1: "issued", 2: "pending", 3: "issued", 4: "canceled", 5: "issued"}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Action  string
			OrderID int64 `json:"orderId"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		st, ok := status[req.OrderID]
		switch {
		case !ok:
			w.WriteHeader(404)
			io.WriteString(w, `{"error_message":"Error(131) orderId is failed."}`)
		case req.Action == "RenewCheck" && renewed[req.OrderID] != 0:
			fmt.Fprintf(w, `{"orderId":%d,"renewed_orderId":%d}`, req.OrderID, renewed[req.OrderID])
		case req.Action == "RenewCheck":
			w.WriteHeader(404)
			io.WriteString(w, `{"error_message":"Error(132) orderId is failed."}`)
		default:
			fmt.Fprintf(w, `{"OrderId":%d,"status":%q,"certificate":{"common_name":"x.example"}}`, req.OrderID, st)
		}
	}))
	t.Cleanup(srv.Close)
	c, err := client.New(srv.URL+"/api/digicert/", "acme", "cok_test")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestGateDirectory(t *testing.T) {
	if _, err := New(Config{Members: members(t)}); err == nil {
		t.Fatal("a gate without EAB keys")
	}
	g, err := New(Config{Members: members(t), EAB: map[string]string{"kid-1": "c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0"}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewTLSServer(g)
	defer srv.Close()
	get := func(path string) (int, map[string]any) {
		t.Helper()
		resp, err := srv.Client().Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body map[string]any
		json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, body
	}
	for _, tc := range []struct {
		path   string
		status int
		typ    string
		detail string
	}{
		{DirectoryPath, 400, "malformed", "orderId"},
		{DirectoryPath + "?orderId=x", 400, "malformed", "not an order number"},
		{DirectoryPath + "?orderId=5&orderId=1", 400, "malformed", "one orderId"},
		{DirectoryPath + "?orderId=5&action=revoke", 400, "malformed", "action"},
		{DirectoryPath + "?orderId=1&action=renew", 403, "unauthorized", "order 1 was renewed by order 2 (pending): use orderId=2"},
		{DirectoryPath + "?orderId=3", 403, "unauthorized", "canceled"},
		{DirectoryPath + "?orderId=9", 403, "unauthorized", "not an order of this account"},
		{"/dir", 403, "unauthorized", "orderId"},
		{"/order-plz", 403, "unauthorized", "orderId"},
	} {
		status, body := get(tc.path)
		if status != tc.status || body["type"] != "urn:ietf:params:acme:error:"+tc.typ ||
			!strings.Contains(fmt.Sprint(body["detail"]), tc.detail) || body["status"] != float64(tc.status) {
			t.Errorf("%s: %d %v", tc.path, status, body)
		}
	}
	if r := g.Refusals(); len(r) != 3 || r[0] != (Refusal{OrderID: 1, Newest: 2, Detail: "order 1 was renewed by order 2 (pending): use orderId=2"}) {
		t.Errorf("refusals: %+v", r)
	}

	// The current orders get Pebble's directory, every URL through the gate with the order.
	for _, q := range []string{"?orderId=2&action=renew", "?orderId=5"} {
		status, dir := get(DirectoryPath + q)
		seg := "2/renew"
		if q == "?orderId=5" {
			seg = "5/-"
		}
		if status != 200 {
			t.Fatalf("%s: %d %v", q, status, dir)
		}
		for _, k := range []string{"newNonce", "newAccount", "newOrder", "revokeCert", "keyChange", "renewalInfo"} {
			if u, _ := dir[k].(string); !strings.HasPrefix(u, srv.URL+"/gate/"+seg+"/") {
				t.Errorf("%s: %s is %q", q, k, dir[k])
			}
		}
		if meta, _ := dir["meta"].(map[string]any); meta["externalAccountRequired"] != true {
			t.Errorf("%s: meta %v", q, dir["meta"])
		}
	}
	// A nonce through the tagged path comes from Pebble.
	resp, err := srv.Client().Head(srv.URL + "/gate/2/renew/nonce-plz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Header.Get("Replay-Nonce") == "" {
		t.Errorf("no nonce: %d", resp.StatusCode)
	}
	if status, body := get(StatusPath); status != 200 || body["accounts"] != float64(0) {
		t.Errorf("status: %d %v", status, body)
	}
}
