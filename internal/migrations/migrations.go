// Package migrations reads the numbered .sql files a store embeds.
package migrations

import (
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
)

// Migration is one schema step: the file NNNN_name.sql becomes Version NNNN.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// List returns the migrations in fsys's root, in version order. Versions
// must be unique and positive.
func List(fsys fs.FS) ([]Migration, error) {
	names, err := fs.Glob(fsys, "*.sql")
	if err != nil {
		return nil, err
	}
	var ms []Migration
	seen := map[int]bool{}
	for _, name := range names {
		num, _, _ := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if err != nil || v <= 0 || seen[v] {
			return nil, fmt.Errorf("migration %s: name must start with a unique positive number", name)
		}
		seen[v] = true
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		ms = append(ms, Migration{Version: v, Name: name, SQL: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	return ms, nil
}

// Latest is the highest version in ms, 0 if none.
func Latest(ms []Migration) int {
	if len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].Version
}

// Pending are the migrations of ms above the database's version current,
// in order; an error when current is above every one of ms (a newer
// binary migrated the database).
func Pending(ms []Migration, current int) ([]Migration, error) {
	if current > Latest(ms) {
		return nil, fmt.Errorf("database schema version %d is newer than this binary knows (%d); upgrade certorder",
			current, Latest(ms))
	}
	i := sort.Search(len(ms), func(i int) bool { return ms[i].Version > current })
	return ms[i:], nil
}
