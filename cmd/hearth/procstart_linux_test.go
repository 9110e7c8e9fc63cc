package main

import (
	"testing"
	"time"
)

// TestKernelStart reads this test process's start from the kernel: it is
// before the main package's init (processStart), by the time the process
// took to start and initialise its packages, which is well under half a
// minute; and hookStart takes it.
func TestKernelStart(t *testing.T) {
	t.Parallel()
	got, ok := kernelStart()
	if !ok {
		t.Fatal("kernelStart: got nothing, want the process's start on Linux")
	}
	if got.After(processStart) {
		t.Errorf("kernelStart: got %v, after the main package's init at %v", got, processStart)
	}
	if d := processStart.Sub(got); d > 30*time.Second {
		t.Errorf("kernelStart: got %v before the main package's init, want well under 30 s", d)
	}
	if h := hookStart(); !h.Before(processStart) {
		t.Errorf("hookStart: got %v, want the kernel's start (%v), before the main package's init", h, got)
	}
}
