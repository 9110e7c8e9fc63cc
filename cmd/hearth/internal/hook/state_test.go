package hook

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestState: shown ids round-trip through a 0600 file per session and
// harness, keep the newest MaxShown, and old files are pruned.
func TestState(t *testing.T) {
	t.Parallel()
	t.Run("OK", func(t *testing.T) {
		dir := t.TempDir()
		var s State
		s.AddShown("a1", "b2", "a1", "")
		if err := SaveState(dir, ClaudeCode, "sess", s); err != nil {
			t.Fatal(err)
		}
		if got := LoadState(dir, ClaudeCode, "sess").Shown; !slices.Equal(got, []string{"a1", "b2"}) {
			t.Errorf("Shown = %v, want [a1 b2]", got)
		}
		if got := LoadState(dir, Codex, "sess").Shown; got != nil {
			t.Errorf("another harness's session of the same id sees %v", got)
		}
		fi, err := os.Stat(statePath(dir, ClaudeCode, "sess"))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("state file: %v %v, want mode 0600", fi, err)
		}
		if d, _ := os.Stat(filepath.Join(dir, "sessions")); d.Mode().Perm() != 0o700 {
			t.Errorf("sessions dir mode = %v, want 0700", d.Mode().Perm())
		}
	})
	t.Run("OKLimit", func(t *testing.T) {
		var s State
		for i := 0; i < MaxShown+20; i++ {
			s.AddShown(fmt.Sprintf("id%03d", i))
		}
		if len(s.Shown) != MaxShown || s.Shown[0] != "id020" {
			t.Errorf("kept %d ids from %s, want the newest %d", len(s.Shown), s.Shown[0], MaxShown)
		}
	})
	t.Run("OKPrune", func(t *testing.T) {
		dir := t.TempDir()
		for _, id := range []string{"old", "new"} {
			if err := SaveState(dir, Codex, id, State{Shown: []string{id}}); err != nil {
				t.Fatal(err)
			}
		}
		past := time.Now().Add(-StateMaxAge - time.Hour)
		if err := os.Chtimes(statePath(dir, Codex, "old"), past, past); err != nil {
			t.Fatal(err)
		}
		if err := PruneStates(dir, time.Now()); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(statePath(dir, Codex, "old")); !os.IsNotExist(err) {
			t.Errorf("old state kept: %v", err)
		}
		if got := LoadState(dir, Codex, "new").Shown; !slices.Equal(got, []string{"new"}) {
			t.Errorf("new state = %v", got)
		}
	})
	t.Run("OKConcurrentUpdates", func(t *testing.T) {
		// Hook runs of one session that update its state at once (a prompt
		// hook before the session-start hook has finished) lose nothing: each
		// change is made to what the one before it wrote. The sleep holds
		// the read-modify-write open, as a slow bootstrap call would.
		dir := t.TempDir()
		const n = 24
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := UpdateState(dir, Copilot, "s", func(st *State) {
					time.Sleep(2 * time.Millisecond)
					st.AddShown(fmt.Sprintf("id%02d", i))
				})
				if err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if got := LoadState(dir, Copilot, "s").Shown; len(got) != n {
			t.Errorf("after %d concurrent updates the state holds %d ids: %v", n, len(got), got)
		}
	})
	t.Run("OKCorrupt", func(t *testing.T) {
		dir := t.TempDir()
		p := statePath(dir, Codex, "s")
		os.MkdirAll(filepath.Dir(p), 0o700)
		os.WriteFile(p, []byte("{broken"), 0o600)
		if got := LoadState(dir, Codex, "s"); got.Shown != nil {
			t.Errorf("corrupt state read as %v, want empty", got)
		}
	})
}
