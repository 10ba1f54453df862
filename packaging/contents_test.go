// Package packaging_test checks, without building anything, what the
// release build would put in the packages and what the documents say of
// it: .goreleaser.yaml's nfpm contents against packaging/test/contents.txt
// (which test/contents.sh checks the built packages against), the
// documents the packaged files name, the package's description, and the
// documents' release commands. It has no package of its own to test.
package packaging_test

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/certorder/certorder/wire"
)

// entry is one item of the nfpm contents: its keys as written.
type entry map[string]string

// nfpmContents reads the contents list of .goreleaser.yaml's nfpms: each
// "- key: value" item with the keys below it, read line by line (the file
// keeps to that form, and the module has no YAML package of its own).
func nfpmContents(t *testing.T) []entry {
	t.Helper()
	b, err := os.ReadFile("../.goreleaser.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "\nnfpms:\n")
	if ok {
		_, rest, ok = strings.Cut(rest, "\n    contents:\n")
	}
	if !ok {
		t.Fatal(".goreleaser.yaml has no nfpms contents")
	}
	var out []entry
	item := regexp.MustCompile(`^      (- |  )(\w+): (.*?)\s*(#.*)?$`)
	for _, line := range strings.Split(rest, "\n") {
		if strings.TrimSpace(line) == "" || strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		if !strings.HasPrefix(line, "      ") {
			break // the next key of the nfpm
		}
		m := item.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("a contents line this test cannot read: %q", line)
		}
		if m[1] == "- " {
			out = append(out, entry{})
		}
		out[len(out)-1][m[2]] = m[3]
	}
	if len(out) < 10 {
		t.Fatalf("read %d contents entries only", len(out))
	}
	return out
}

// shipped are the files each package gets from the nfpm contents, by
// path: dst -> src. nfpm's "type: doc" and "type: license" are rpm
// notions (%doc, %license) that its deb packager drops.
func shipped(contents []entry) map[string]map[string]string {
	files := map[string]map[string]string{"deb": {}, "rpm": {}}
	for _, e := range contents {
		if e["type"] == "dir" || e["src"] == "" {
			continue
		}
		for _, pkg := range []string{"deb", "rpm"} {
			if e["packager"] != "" && e["packager"] != pkg {
				continue
			}
			if pkg == "deb" && (e["type"] == "doc" || e["type"] == "license") {
				continue
			}
			files[pkg][e["dst"]] = e["src"]
		}
	}
	return files
}

// listed reads packaging/test/contents.txt: path -> the packages listed.
func listed(t *testing.T) map[string][]string {
	t.Helper()
	f, err := os.Open("test/contents.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		if len(fields) < 3 {
			t.Fatalf("contents.txt: %q is not MODE PATH PACKAGES", sc.Text())
		}
		out[fields[1]] = fields[2:]
	}
	return out
}

// docPaths are the repository's docs/ files a text names (docs/SYNC.md,
// docs/openapi.yaml), each once.
func docPaths(text string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`\bdocs/[A-Za-z0-9_./-]*[A-Za-z0-9_]`).FindAllString(text, -1) {
		if !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out
}

// The packages ship the documents their own files name, where those
// names lead: every docs/ path in the packaged README, environment file,
// systemd units and documents is a file of both packages at
// /usr/share/doc/certorder/docs/ (the screenshots aside: images, left
// out); every docs/*.md is shipped so; .goreleaser.yaml and
// packaging/test/contents.txt list the same files for each package; the
// units' Documentation= names shipped files.
func TestPackagesShipTheirDocs(t *testing.T) {
	const docDir = "/usr/share/doc/certorder/"
	files := shipped(nfpmContents(t))
	list := listed(t)

	// The two lists agree, package by package (the binary and Debian's
	// changelog are made by the build, not copied from the tree).
	generated := map[string][]string{"/usr/bin/certorder": {"deb", "rpm"}, docDir + "changelog.Debian.gz": {"deb"}}
	for path, pkgs := range list {
		for _, pkg := range []string{"deb", "rpm"} {
			_, inYAML := files[pkg][path]
			if want := slices.Contains(generated[path], pkg); want {
				inYAML = true
			}
			if inList := slices.Contains(pkgs, pkg); inList != inYAML {
				t.Errorf("%s: in contents.txt for the %s: %v; in .goreleaser.yaml: %v", path, pkg, inList, inYAML)
			}
		}
	}
	for _, pkg := range []string{"deb", "rpm"} {
		for dst, src := range files[pkg] {
			if _, ok := list[dst]; !ok {
				t.Errorf(".goreleaser.yaml puts %s in the %s as %s, which contents.txt does not list", src, pkg, dst)
			}
			if _, err := os.Stat(filepath.Join("..", src)); err != nil {
				t.Errorf(".goreleaser.yaml's %s: %v", src, err)
			}
		}
	}

	// Every docs/*.md of the repository, at the path its name gives.
	mds, _ := filepath.Glob("../docs/*.md")
	if len(mds) < 5 {
		t.Fatalf("docs/*.md: %v", mds)
	}
	for _, md := range mds {
		name := "docs/" + filepath.Base(md)
		for _, pkg := range []string{"deb", "rpm"} {
			if src := files[pkg][docDir+name]; src != name {
				t.Errorf("the %s has not %s at %s", pkg, name, docDir+name)
			}
		}
	}

	// What the packaged files name is there. Each packaged text is read
	// from the tree (src), the names looked up among the files shipped.
	named := 0
	for _, pkg := range []string{"deb", "rpm"} {
		for dst, src := range files[pkg] {
			if !strings.HasSuffix(src, ".md") && !strings.HasSuffix(src, ".env") && !strings.Contains(src, "systemd/") {
				continue
			}
			b, err := os.ReadFile(filepath.Join("..", src))
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range docPaths(string(b)) {
				named++
				if p == "docs/screenshots" || strings.HasPrefix(p, "docs/screenshots/") {
					continue // images: in the repository only
				}
				if _, ok := files[pkg][docDir+p]; !ok {
					t.Errorf("the %s's %s names %s, which the %s does not ship at %s", pkg, dst, p, pkg, docDir+p)
				}
			}
			for _, m := range regexp.MustCompile(`(?m)^Documentation=(.*)$`).FindAllStringSubmatch(string(b), -1) {
				for _, u := range strings.Fields(m[1]) {
					if path, ok := strings.CutPrefix(u, "file://"); ok {
						if _, shipped := files[pkg][path]; !shipped {
							t.Errorf("%s: Documentation=%s is not a file of the %s", src, u, pkg)
						}
					}
				}
			}
		}
	}
	if named < 20 {
		t.Errorf("only %d docs/ paths named in the packaged files: is the pattern right?", named)
	}
}

// The package's description names every action of the API (docs/API.md,
// wire.Actions).
func TestPackageDescriptionCurrent(t *testing.T) {
	b, err := os.ReadFile("../.goreleaser.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)\n    description: \|-\n(.*?)\n    \w`).FindSubmatch(b)
	if m == nil {
		t.Fatal("no nfpm description in .goreleaser.yaml")
	}
	description := string(m[1])
	for name := range wire.Actions {
		if !regexp.MustCompile(`\b` + name + `\b`).MatchString(description) {
			t.Errorf("the package's description does not name the action %s:\n%s", name, description)
		}
	}
	api, err := os.ReadFile("../docs/API.md")
	if err != nil {
		t.Fatal(err)
	}
	for name := range wire.Actions {
		if !strings.Contains(string(api), "`"+name+"`") {
			t.Errorf("docs/API.md does not name the action %s", name)
		}
	}
}

// Every goreleaser release command in the documents works as written on a
// machine with Go only: it skips the SBOMs (--skip=sbom), or the same
// section installs syft first; the versions installed are CI's (.ci/run's
// "tool" lines).
func TestReleaseCommandsWork(t *testing.T) {
	ci, err := os.ReadFile("../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	pins := map[string]string{} // module path -> version
	for _, m := range regexp.MustCompile(`(?m)^tool \S+ (\S+) (v\S+)`).FindAllStringSubmatch(string(ci), -1) {
		pins[m[1]] = m[2]
	}
	if pins["github.com/goreleaser/goreleaser/v2"] == "" || pins["github.com/anchore/syft/cmd/syft"] == "" {
		t.Fatalf(".ci/run pins no goreleaser or syft: %v", pins)
	}
	docs, _ := filepath.Glob("../docs/*.md")
	docs = append(docs, "../README.md", "README.md")
	commands := 0
	for _, file := range docs {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, section := range strings.Split(string(b), "\n## ") {
			syft := false
			for _, line := range strings.Split(section, "\n") {
				for _, m := range regexp.MustCompile(`go install (\S+)@(\S+)`).FindAllStringSubmatch(line, -1) {
					if pin, ok := pins[m[1]]; ok && m[2] != pin {
						t.Errorf("%s: go install %s@%s, but CI pins %s", file, m[1], m[2], pin)
					}
					if m[1] == "github.com/anchore/syft/cmd/syft" {
						syft = true
					}
				}
				// A command: at the start of a line, or in a code span,
				// with flags (prose names "goreleaser release" bare).
				for _, m := range regexp.MustCompile("(?:^|`|&& )(goreleaser release [^`#]*)").FindAllStringSubmatch(line, -1) {
					cmd := strings.TrimSpace(m[1])
					if !strings.Contains(cmd, "--") {
						continue
					}
					commands++
					if !syft && !regexp.MustCompile(`--skip[= ]\S*\bsbom\b`).MatchString(cmd) {
						t.Errorf("%s: %q needs syft, which nothing before it in its section installs: add --skip=sbom, or the syft install", file, cmd)
					}
				}
			}
		}
	}
	if commands < 2 {
		t.Errorf("found %d goreleaser release commands in the documents", commands)
	}
}
