package certorder_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// mdLink is a Markdown link or image: [text](target) or [text](target "title").
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// Every relative link in the README and the documents names a file or
// directory of the repository (code blocks left out: they hold commands).
func TestDocLinksResolve(t *testing.T) {
	files, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, "README.md", "packaging/README.md")
	checked := 0
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		inCode := false
		for n, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				inCode = !inCode
				continue
			}
			if inCode {
				continue
			}
			for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") || strings.HasPrefix(target, "#") {
					continue
				}
				target, _, _ = strings.Cut(target, "#")
				path := filepath.Join(filepath.Dir(file), target)
				checked++
				if _, err := os.Stat(path); err != nil {
					t.Errorf("%s:%d: the link %s does not resolve (%s)", file, n+1, m[1], path)
					continue
				}
				if rel, err := filepath.Rel(".", path); err != nil || strings.HasPrefix(rel, "..") {
					t.Errorf("%s:%d: the link %s points outside the repository", file, n+1, m[1])
				}
			}
		}
	}
	if checked < 10 {
		t.Fatalf("only %d links checked: is the pattern right?", checked)
	}
}
