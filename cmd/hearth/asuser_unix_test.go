//go:build unix

package main

import (
	"os/exec"
	"syscall"
)

// asUser makes cmd run as the user and group uid.
func asUser(cmd *exec.Cmd, uid uint32) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
}
