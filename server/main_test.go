package server_test

import (
	"os"
	"testing"

	"github.com/certorder/certorder/internal/apispec"
)

func TestMain(m *testing.M) {
	spec := apispec.Install() // every API answer of these tests is checked against docs/openapi.yaml
	os.Exit(spec.Done(m.Run()))
}
