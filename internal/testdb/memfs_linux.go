package testdb

import "syscall"

// memFS returns /dev/shm, a directory in memory (tmpfs), when it has 1 GiB
// free (a container's is often 64 MiB); "" otherwise.
func memFS() string {
	var fs syscall.Statfs_t
	if syscall.Statfs("/dev/shm", &fs) != nil || uint64(fs.Bavail)*uint64(fs.Bsize) < 1<<30 {
		return ""
	}
	return "/dev/shm"
}
