package certorder_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The layout issue 41 set, kept: the root package is the domain alone, at
// most 1,500 lines, with no interface above 12 methods and nothing of the
// delivery machinery; no non-test Go file of the module above 500 lines.
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
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl:
				if n.Recv == nil && machinery.MatchString(n.Name.Name) && n.Name.IsExported() {
					t.Errorf("the root package exports %s, a name of the delivery machinery", n.Name)
				}
				return false
			case *ast.TypeSpec:
				if machinery.MatchString(n.Name.Name) && n.Name.IsExported() {
					t.Errorf("the root package exports %s, a name of the delivery machinery", n.Name)
				}
				if it, ok := n.Type.(*ast.InterfaceType); ok && len(it.Methods.List) > 12 {
					t.Errorf("interface %s has %d methods, more than 12", n.Name, len(it.Methods.List))
				}
			case *ast.ValueSpec:
				for _, name := range n.Names {
					if machinery.MatchString(name.Name) && name.IsExported() {
						t.Errorf("the root package exports %s, a name of the delivery machinery", name)
					}
				}
			}
			return true
		})
	}
	if lines > 1500 {
		t.Errorf("the root package has %d non-test lines, more than 1,500", lines)
	}
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() && strings.HasPrefix(d.Name(), ".") && path != "." {
			return err
		}
		if d.IsDir() && path != "." && fileExists(filepath.Join(path, "go.mod")) {
			return filepath.SkipDir // another module
		}
		if d.IsDir() && d.Name() == "testdata" {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
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
