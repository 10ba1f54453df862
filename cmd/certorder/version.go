package main

import (
	"fmt"

	"github.com/certorder/certorder/internal/buildinfo"
)

// version prints the build's version, commit and date (internal/buildinfo).
func (e *env) version(args []string) error {
	fs := e.newFlags("version", "")
	if _, err := parse(fs, args, 0); err != nil {
		return err
	}
	_, err := fmt.Fprintln(e.stdout, buildinfo.Get())
	return err
}
