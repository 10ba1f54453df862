package buildinfo

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestGet(t *testing.T) {
	recorded := func(version string, settings ...string) func() (*debug.BuildInfo, bool) {
		return func() (*debug.BuildInfo, bool) {
			bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: version}}
			for i := 0; i < len(settings); i += 2 {
				bi.Settings = append(bi.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
			}
			return bi, true
		}
	}
	none := func() (*debug.BuildInfo, bool) { return nil, false }
	for _, tc := range []struct {
		name                  string
		version, commit, date string
		read                  func() (*debug.BuildInfo, bool)
		want                  Info
	}{
		{"ldflags win", "1.2.0", "abc123", "2026-11-21T10:00:00Z",
			recorded("v9.9.9", "vcs.revision", "fff", "vcs.time", "2000-01-01T00:00:00Z"),
			Info{Version: "1.2.0", Commit: "abc123", Date: "2026-11-21T10:00:00Z", GoVersion: "go1.26.8"}},
		{"go build in a clone", "", "", "",
			recorded("(devel)", "vcs.revision", "fff", "vcs.time", "2026-01-02T03:04:05Z", "vcs.modified", "true"),
			Info{Version: "devel", Commit: "fff", Date: "2026-01-02T03:04:05Z", Modified: true, GoVersion: "go1.26.8"}},
		{"go install of a module version", "", "", "",
			recorded("v1.3.0"),
			Info{Version: "v1.3.0", Commit: "unknown", Date: "unknown", GoVersion: "go1.26.8"}},
		{"nothing recorded", "", "", "", none,
			Info{Version: "devel", Commit: "unknown", Date: "unknown"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := get(tc.version, tc.commit, tc.date, tc.read)
			if tc.want.GoVersion == "" {
				tc.want.GoVersion = got.GoVersion // the running toolchain's
			}
			if got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestString(t *testing.T) {
	got := Info{Version: "1.2.0", Commit: "abc", Date: "2026-11-21T10:00:00Z", Modified: true, GoVersion: "go1.26.8"}.String()
	want := "certorder 1.2.0 (commit abc (modified), built 2026-11-21T10:00:00Z, go1.26.8)"
	if got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if g := Get(); !strings.HasPrefix(g.GoVersion, "go") || g.Version == "" {
		t.Fatalf("Get() = %+v", g)
	}
}
