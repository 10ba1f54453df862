package apispec

import (
	"net/http"
	"testing"
)

// The document is valid OpenAPI 3.1, and Check tells answers that match it
// from answers that do not.
func TestCheck(t *testing.T) {
	h := http.Header{"Content-Type": {"application/json"}}
	auth := []byte(`{"AccessName":"a","AccessKey":"k","action":"Auth"}`)
	for _, tc := range []struct {
		name       string
		status     int
		req, resp  string
		wantErrors bool
	}{
		{"Auth", 200, string(auth), `{"message":"Authenticated"}`, false},
		{"a failure", 401, string(auth), `{"error_message":"Error(111) AccessName is failed."}`, false},
		{"a failure in a 200", 200, string(auth), `{"error_message":"Error(111) AccessName is failed."}`, false},
		{"CertificateCheck", 200, `{"AccessName":"a","AccessKey":"k","action":"CertificateCheck","serial_number":"0a:1b"}`,
			`{"orderId":1,"certificate_id":2,"is_current":true}`, false},
		{"OrderInfo, quirky types", 200, `{"AccessName":"a","AccessKey":"k","action":"OrderInfo","orderId":"1"}`,
			`{"OrderId":1,"certificate":{"user_id":42,"receipt_id":"12","purchased_dns_names":null,"valid_till":"2027-01-01","days_remaining":3},` +
				`"purchased_wildcard_names":null,"is_renewed":false}`, false},
		{"a number the table lacks", 404, string(auth), `{"error_message":"Error(199) orderId is failed."}`, true},
		{"an undocumented member", 200, string(auth), `{"message":"Authenticated","extra":1}`, true},
		{"a wrong type", 200, `{"AccessName":"a","AccessKey":"k","action":"RenewCheck","orderId":1}`, `{"orderId":"1","renewed_orderId":2}`, true},
		{"a request the document refuses, answered", 200, `{"AccessName":"a","AccessKey":"k","action":"OrderInfo"}`,
			`{"OrderId":1,"certificate":{},"is_renewed":false}`, true},
		{"both serial_number and thumbprint, answered", 200,
			`{"AccessName":"a","AccessKey":"k","action":"CertificateCheck","serial_number":"0a","thumbprint":"0a"}`, `{"orderId":1,"is_current":true}`, true},
	} {
		err := Check(tc.status, h, []byte(tc.req), []byte(tc.resp))
		if (err != nil) != tc.wantErrors {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}
