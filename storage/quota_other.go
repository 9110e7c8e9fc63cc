//go:build !unix

package storage

// isQuota: no disk quota error on this platform.
func isQuota(error) bool { return false }
