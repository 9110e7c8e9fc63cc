//go:build unix

package engine

import (
	"errors"
	"syscall"
)

// isQuota reports a write refused by a disk quota: full, for this user.
func isQuota(err error) bool { return errors.Is(err, syscall.EDQUOT) }
