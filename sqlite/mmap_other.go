//go:build !unix

package sqlite

import "errors"

// mapShared is not available here: the cache stays off on SQLite.
func mapShared(string, int) ([]byte, func() error, error) {
	return nil, nil, errors.New("shared mappings are not supported on this system")
}
