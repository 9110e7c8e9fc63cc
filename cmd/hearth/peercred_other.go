//go:build !linux

package main

import (
	"net"
	"os"
)

// peerUID is this process's user id where the system gives no peer
// credentials this way: the socket's mode 0600 alone keeps other users out
// (docs/operations.md).
func peerUID(*net.UnixConn) (int, error) { return os.Getuid(), nil }
