package certorder_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The layout issue 41 set, kept: the root package is the domain alone, at
// most 1,500 lines, with no interface above 12 methods and nothing of the
// delivery machinery; each store one claim and one finish method (the one
// queue's); no non-test Go file of the module above 500 lines.
// (Issue 41's bound was passed once unnoticed, by 14 lines.)
func TestLayout(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	lines := 0
	machinery := regexp.MustCompile(`Claim|Lease|Attempt|Outbox|FanOut|Queue|Delivery`)
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		lines += fset.File(f.Pos()).LineCount()
		machineryName := func(id *ast.Ident) {
			if id.IsExported() && machinery.MatchString(id.Name) {
				t.Errorf("the root package exports %s, a name of the delivery machinery", id.Name)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl:
				if n.Recv == nil {
					machineryName(n.Name)
				}
				return false
			case *ast.TypeSpec:
				machineryName(n.Name)
				if it, ok := n.Type.(*ast.InterfaceType); ok && len(it.Methods.List) > 12 {
					t.Errorf("interface %s has %d methods, more than 12", n.Name, len(it.Methods.List))
				}
			case *ast.ValueSpec:
				for _, id := range n.Names {
					machineryName(id)
				}
			}
			return true
		})
	}
	if lines > 1500 {
		t.Errorf("the root package has %d non-test lines, more than 1,500", lines)
	}
	queueMethod := regexp.MustCompile(`(?m)^func \([^)]*\) (Claim|Finish)\w*\(`)
	for _, store := range []string{"sqlite", "postgres"} {
		files, err := filepath.Glob(filepath.Join(store, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		var methods []string
		for _, path := range files {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasSuffix(path, "_test.go") {
				for _, m := range queueMethod.FindAllStringSubmatch(string(b), -1) {
					methods = append(methods, m[1])
				}
			}
		}
		if slices.Compare(methods, []string{"Claim", "Finish"}) != 0 {
			t.Errorf("%s's claim and finish methods: %v, want one of each", store, methods)
		}
	}
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || fileExists(filepath.Join(path, "go.mod"))):
			return filepath.SkipDir // .git, .axe; test data; another module
		case d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go"):
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if n := strings.Count(string(b), "\n"); n > 500 {
			t.Errorf("%s has %d lines, more than 500", path, n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
