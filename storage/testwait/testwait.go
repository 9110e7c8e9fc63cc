// Package testwait holds WaitFor, the one way Hearth's tests wait for
// something another goroutine or process does. It imports only the standard
// library, so the tests of every package (storage, server, the transports,
// cmd/hearth) may import it without adding an arrow the import-direction
// test (cmd/hearth/arch_test.go) forbids. It lives under storage/, the
// bottom layer every other package may already reach, because the
// repository's top level holds only the architecture's fixed folders.
package testwait

import (
	"testing"
	"time"
)

// Timeout is how long WaitFor waits before it fails the test: long enough
// for a loaded machine under the race detector, where a background flush or
// a child process can take seconds.
const Timeout = 30 * time.Second

// maxPause bounds the pause between two looks.
const maxPause = 20 * time.Millisecond

// WaitFor polls cond until it holds, failing tb (naming what it waited
// for) once Timeout has passed. It looks at once, then after 1 ms, doubling
// the pause up to 20 ms: a condition that holds soon costs little, one that
// takes seconds costs few looks. It polls a condition; it never stands in
// for waiting a length of time.
func WaitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	waitFor(tb, what, cond, Timeout)
}

func waitFor(tb testing.TB, what string, cond func() bool, timeout time.Duration) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	pause := time.Millisecond
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %v waiting until %s", timeout, what)
			return
		}
		time.Sleep(pause)
		pause = min(2*pause, maxPause)
	}
}
