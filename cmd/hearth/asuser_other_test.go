//go:build !unix

package main

import "os/exec"

// asUser is never reached where processes have no Unix user: asNobody
// skips unless the test runs as root (uid 0).
func asUser(*exec.Cmd, uint32) {}
