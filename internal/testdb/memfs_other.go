//go:build !linux

package testdb

// memFS returns "": no directory in memory is known here.
func memFS() string { return "" }
