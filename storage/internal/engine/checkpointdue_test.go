package engine

import "testing"

// TestCheckpointDue: a background checkpoint is due every walAutoPages
// frames, counted from where the last one found the WAL, or from its start
// once it started over.
func TestCheckpointDue(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		pages, found int
		want         bool
	}{
		{10, 0, false},
		{walAutoPages, 0, true},
		{walAutoPages + 5, walAutoPages, false}, // just checkpointed: not after every commit
		{2 * walAutoPages, walAutoPages, true},
		{walAutoPages - 1, 3 * walAutoPages, false}, // started over, not yet full
		{walAutoPages, 3 * walAutoPages, true},
	} {
		if got := checkpointDue(tt.pages, tt.found); got != tt.want {
			t.Errorf("checkpointDue(%d, %d) = %v, want %v", tt.pages, tt.found, got, tt.want)
		}
	}
}
