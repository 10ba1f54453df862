// Package apispec checks the API's answers against docs/openapi.yaml, for
// the tests: every answer the tests' request helpers receive (cmd/certorder,
// server) goes through Check, so that the document describes what the
// service says, not what it was meant to say.
package apispec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	verrors "github.com/pb33f/libopenapi-validator/errors"
)

// Path is docs/openapi.yaml, found from this file's place in the module.
func Path() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "docs", "openapi.yaml")
}

var (
	mu      sync.Mutex // the validator's caches are not documented as safe for concurrent use
	loaded  validator.Validator
	loadErr error
	once    sync.Once
)

func load() (validator.Validator, error) {
	once.Do(func() {
		spec, err := os.ReadFile(Path())
		if err != nil {
			loadErr = err
			return
		}
		doc, err := libopenapi.NewDocument(spec)
		if err != nil {
			loadErr = err
			return
		}
		v, errs := validator.NewValidator(doc)
		if len(errs) > 0 {
			loadErr = errors.Join(errs...)
			return
		}
		if ok, verrs := v.ValidateDocument(); !ok {
			loadErr = fmt.Errorf("docs/openapi.yaml is not a valid OpenAPI document: %s", describe(verrs))
			return
		}
		loaded = v
	})
	return loaded, loadErr
}

// Check checks one exchange with the endpoint: the answer (status, headers
// and body) against the responses the document gives for it, whatever the
// request was; and, when the answer is a success (no error_message), the
// request body against the document's request, since the service accepted
// it. The answer is looked up as the documented endpoint's, whatever path
// (a wrong one gets 102) and method (101) the request had.
func Check(status int, header http.Header, reqBody, respBody []byte) error {
	v, err := load()
	if err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	req := request(reqBody)
	resp := &http.Response{StatusCode: status, Header: header.Clone(), Body: io.NopCloser(bytes.NewReader(respBody)), Request: req}
	if ok, errs := v.ValidateHttpResponse(req, resp); !ok {
		return fmt.Errorf("answer %d %s does not match docs/openapi.yaml: %s", status, respBody, describe(errs))
	}
	var fields map[string]json.RawMessage
	if status == http.StatusOK && json.Unmarshal(respBody, &fields) == nil && fields["error_message"] == nil {
		if ok, errs := v.ValidateHttpRequest(request(reqBody)); !ok {
			return fmt.Errorf("request %s was answered %s but does not match docs/openapi.yaml: %s", reqBody, respBody, describe(errs))
		}
	}
	return nil
}

// request is a POST of body to the documented endpoint.
func request(body []byte) *http.Request {
	req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1:8080/api/digicert/", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	return req
}

func describe(errs []*verrors.ValidationError) string {
	var b strings.Builder
	for _, e := range errs {
		fmt.Fprintf(&b, "\n  %s: %s", e.Message, e.Reason)
		for _, se := range e.SchemaValidationErrors {
			fmt.Fprintf(&b, "\n    %s: %s", se.FieldPath, se.Reason)
		}
	}
	return b.String()
}
