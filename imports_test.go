package certorder_test

import (
	"go/build"
	"strings"
	"testing"
)

// The root package is the ground floor: as its comment says, it imports
// the standard library only, no package of this module nor any other.
func TestRootImportsStandardLibraryOnly(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range pkg.Imports {
		if strings.Contains(strings.Split(imp, "/")[0], ".") {
			t.Errorf("the root package imports %s", imp)
		}
	}
	if len(pkg.Imports) == 0 {
		t.Fatal("no imports found: is the package read?")
	}
}
