// Package buildinfo says which build of certorder is running: the version,
// commit and date that the release build sets with -ldflags -X, or, in a
// plain `go build`, what the Go toolchain recorded in the binary.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Set by the release build, for example:
//
//	go build -ldflags "-X github.com/certorder/certorder/internal/buildinfo.Version=1.2.0"
//
// Empty in an ordinary build; Get then falls back to debug.ReadBuildInfo.
var (
	Version string // the release version, such as 1.2.0
	Commit  string // the full git commit hash
	Date    string // the build time, RFC 3339
)

// Info describes the running binary.
type Info struct {
	Version   string // release or module version; "devel" when unknown
	Commit    string // git commit; "unknown" when not recorded
	Date      string // build or commit time; "unknown" when not recorded
	Modified  bool   // built from a work tree with uncommitted changes
	GoVersion string // the Go toolchain that built it
}

// Get returns the build's description: the -ldflags values where set, and
// otherwise what debug.ReadBuildInfo recorded (module version, vcs.revision,
// vcs.time, vcs.modified).
func Get() Info {
	return get(Version, Commit, Date, debug.ReadBuildInfo)
}

func get(version, commit, date string, read func() (*debug.BuildInfo, bool)) Info {
	info := Info{Version: version, Commit: commit, Date: date, GoVersion: runtime.Version()}
	if bi, ok := read(); ok {
		if bi.GoVersion != "" {
			info.GoVersion = bi.GoVersion
		}
		// "(devel)" is what `go build` in a clone records: no version known.
		if info.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			info.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if info.Commit == "" {
					info.Commit = s.Value
				}
			case "vcs.time":
				if info.Date == "" {
					info.Date = s.Value
				}
			case "vcs.modified":
				info.Modified = s.Value == "true"
			}
		}
	}
	if info.Version == "" {
		info.Version = "devel"
	}
	if info.Commit == "" {
		info.Commit = "unknown"
	}
	if info.Date == "" {
		info.Date = "unknown"
	}
	return info
}

// String is the one line `certorder version` prints.
func (i Info) String() string {
	commit := i.Commit
	if i.Modified {
		commit += " (modified)"
	}
	return fmt.Sprintf("certorder %s (commit %s, built %s, %s)", i.Version, commit, i.Date, i.GoVersion)
}
