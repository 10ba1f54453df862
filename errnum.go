package certorder

import "net/http"

// ErrorNumber is the number in a failure answer, "Error(<number>) <text>".
// Each number stands for one condition; the table is in docs/API.md.
type ErrorNumber int

// The error numbers of the wire protocol. Never renumber one: clients match on them.
const (
	NumMalformedRequest   ErrorNumber = 100 // body not a JSON object, or too large
	NumMethodNotAllowed   ErrorNumber = 101 // not a POST
	NumUnknownPath        ErrorNumber = 102 // no endpoint at this path
	NumCredentialsMissing ErrorNumber = 110 // AccessName or AccessKey absent, empty or not a string
	NumCredentialsFailed  ErrorNumber = 111 // unknown member, wrong or revoked key, disabled member
	NumUnknownAction      ErrorNumber = 120 // action absent or not Auth, OrderInfo, RenewCheck
	NumBadOrderID         ErrorNumber = 130 // orderId absent or not a positive int64
	NumNoSuchOrder        ErrorNumber = 131 // no order with that number for this member
	NumNotRenewed         ErrorNumber = 132 // RenewCheck on an order without renewal
	NumRateLimited        ErrorNumber = 140 // too many requests
	NumUnavailable        ErrorNumber = 150 // store unreachable or server overloaded; try again
	NumInternal           ErrorNumber = 190 // anything else that went wrong on the server
)

// Text is the error text that follows the number, in the spec's style.
func (n ErrorNumber) Text() string {
	switch n {
	case NumCredentialsMissing, NumCredentialsFailed:
		return "AccessName is failed."
	case NumBadOrderID, NumNoSuchOrder, NumNotRenewed:
		return "orderId is failed."
	case NumUnknownAction:
		return "action is failed."
	case NumMalformedRequest:
		return "request is failed."
	case NumMethodNotAllowed:
		return "method is failed."
	case NumUnknownPath:
		return "path is failed."
	case NumRateLimited:
		return "rate limit is exceeded."
	case NumUnavailable:
		return "service is unavailable."
	default:
		return "internal error."
	}
}

// HTTPStatus is the status a failure carries (unless the server answers all with 200).
func (n ErrorNumber) HTTPStatus() int {
	switch n {
	case NumMalformedRequest, NumCredentialsMissing, NumUnknownAction, NumBadOrderID:
		return http.StatusBadRequest
	case NumMethodNotAllowed:
		return http.StatusMethodNotAllowed
	case NumUnknownPath, NumNoSuchOrder, NumNotRenewed:
		return http.StatusNotFound
	case NumCredentialsFailed:
		return http.StatusUnauthorized
	case NumRateLimited:
		return http.StatusTooManyRequests
	case NumUnavailable:
		return http.StatusServiceUnavailable
	default:
		return http.StatusInternalServerError
	}
}
