//go:build !unix

package server

// descriptorLimit is 0: the system sets no limit on descriptors.
func descriptorLimit() int { return 0 }
