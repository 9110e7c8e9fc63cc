package hook

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hearth-memory/hearth/storage/fileio"
)

// Limits of the per-session state.
const (
	// MaxShown is how many shown record ids a session remembers: the most
	// memory_search accepts in exclude.
	MaxShown = 100
	// StateMaxAge is how long a session's state file lives after its last
	// write; session-start removes older ones.
	StateMaxAge = 7 * 24 * time.Hour
)

// State is what a session remembers between hook runs: the ids of records
// prompt recall has shown (sent as exclude so nothing is shown twice).
type State struct {
	Shown []string `json:"shown,omitempty"`
	// LastClose is the op_id of the session's last close (Copilot's
	// session-end hook waits for a transcript that closes anew).
	LastClose string `json:"last_close,omitempty"`
}

// statePath is the state file of a session of a harness. The name is a
// digest: a session id is the harness's text and never a path.
func statePath(cacheDir string, h Harness, sessionID string) string {
	sum := sha256.Sum256([]byte(string(h) + "\x00" + sessionID))
	return filepath.Join(cacheDir, "sessions", hex.EncodeToString(sum[:16])+".json")
}

// LoadState reads a session's state; a missing or unreadable file is an
// empty state (the worst case is a record shown twice).
func LoadState(cacheDir string, h Harness, sessionID string) State {
	var s State
	b, err := os.ReadFile(statePath(cacheDir, h, sessionID))
	if err != nil {
		return State{}
	}
	if json.Unmarshal(b, &s) != nil {
		return State{}
	}
	return s
}

// AddShown appends ids not yet remembered, keeping the newest MaxShown.
func (s *State) AddShown(ids ...string) {
	for _, id := range ids {
		if id == "" || slices.Contains(s.Shown, id) {
			continue
		}
		s.Shown = append(s.Shown, id)
	}
	if n := len(s.Shown); n > MaxShown {
		s.Shown = append([]string(nil), s.Shown[n-MaxShown:]...)
	}
}

// SaveState writes a session's state atomically, mode 0600.
func SaveState(cacheDir string, h Harness, sessionID string, s State) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return writeFileAtomic(statePath(cacheDir, h, sessionID), b)
}

// stateLockWait bounds how long UpdateState waits for another hook run of
// the same session; the critical section is one small read and one write.
const stateLockWait = 500 * time.Millisecond

// UpdateState reads a session's state, lets change edit it and writes it
// back, holding the session's lock throughout. A harness may run two hooks
// of one session at once (a prompt hook before the session-start hook has
// finished): a plain read and write would let the slower one
// write back what it read before the other's change, and lose the ids
// recall showed. When the lock cannot be had within stateLockWait the
// update goes ahead unlocked: the worst case is a record shown twice.
func UpdateState(cacheDir string, h Harness, sessionID string, change func(*State)) error {
	p := statePath(cacheDir, h, sessionID)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	if unlock, err := lockFile(p+".lock", stateLockWait); err == nil {
		defer unlock()
		// The lock file ages with the state, so PruneStates removes the
		// two together and never a lock a live session still uses.
		now := time.Now()
		_ = os.Chtimes(p+".lock", now, now)
	}
	s := LoadState(cacheDir, h, sessionID)
	change(&s)
	return SaveState(cacheDir, h, sessionID, s)
}

// PruneStates removes session state files not written for StateMaxAge.
func PruneStates(cacheDir string, now time.Time) error {
	dir := filepath.Join(cacheDir, "sessions")
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".json") && !strings.HasSuffix(e.Name(), ".json.lock") && !strings.HasPrefix(e.Name(), ".tmp-") {
			continue
		}
		fi, err := e.Info()
		if err != nil || now.Sub(fi.ModTime()) <= StateMaxAge {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// writeFileAtomic writes data to path through a temporary file in the same
// directory and a rename: a reader sees the old file or the new one, never
// a part. Directories are made 0700, the file is 0600 and synced first.
func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return fileio.WriteAtomic(path, data, 0o600)
}
