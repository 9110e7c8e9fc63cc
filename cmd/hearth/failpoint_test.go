//go:build !failpoint

package main

import "testing"

// TestFailpoint_OffInNormalBuilds: a production binary never reads
// HEARTH_FAILPOINT, so the crash-test hook cannot hold a job in the field.
func TestFailpoint_OffInNormalBuilds(t *testing.T) {
	// Not parallel: it sets the process environment (t.Setenv), which every test shares.
	t.Setenv("HEARTH_FAILPOINT", "job-after-lease")
	if got := failpoint(); got != "" {
		t.Errorf("failpoint() = %q in a normal build, want empty", got)
	}
}
