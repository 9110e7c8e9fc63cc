//go:build !(linux || darwin || freebsd)

package engine

// diskSpace cannot tell on this platform.
func diskSpace(string) DiskSpace { return DiskSpace{} }
