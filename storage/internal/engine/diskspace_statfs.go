//go:build linux || darwin || freebsd

package engine

import "golang.org/x/sys/unix"

// diskSpace asks the file system holding dir (statfs).
func diskSpace(dir string) DiskSpace {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return DiskSpace{}
	}
	bs := uint64(st.Bsize)
	return DiskSpace{Free: uint64(st.Bavail) * bs, Total: uint64(st.Blocks) * bs, Known: true}
}
