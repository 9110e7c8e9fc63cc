//go:build !unix

package engine

// isQuota: no disk quota error on this platform.
func isQuota(error) bool { return false }
