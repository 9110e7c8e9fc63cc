//go:build !(linux || darwin || freebsd)

package storage

// diskSpace cannot tell on this platform.
func diskSpace(string) DiskSpace { return DiskSpace{} }
