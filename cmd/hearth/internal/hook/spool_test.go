package hook

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestSpool_Put writes one 0600 file per key, atomically (no temporary file
// is left), once per key, and refuses bad keys and a full spool.
func TestSpool_Put(t *testing.T) {
	t.Parallel()
	t.Run("OK", func(t *testing.T) {
		s := &Spool{Dir: filepath.Join(t.TempDir(), "spool"), Now: time.Now}
		args := map[string]any{"session_id": "s", "op_id": "cc-12345678"}
		if err := s.Put("cc-12345678", "memory_session_close", args); err != nil {
			t.Fatal(err)
		}
		if err := s.Put("cc-12345678", "memory_session_close", map[string]any{"other": true}); err != nil {
			t.Fatal(err)
		}
		entries, _ := os.ReadDir(s.Dir)
		if len(entries) != 1 || entries[0].Name() != "cc-12345678.json" {
			t.Fatalf("spool holds %v, want one file", entries)
		}
		fi, _ := entries[0].Info()
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("mode = %v, want 0600", fi.Mode().Perm())
		}
		var sp Spooled
		b, _ := os.ReadFile(filepath.Join(s.Dir, "cc-12345678.json"))
		if err := json.Unmarshal(b, &sp); err != nil || sp.Tool != "memory_session_close" || string(sp.Args) != `{"op_id":"cc-12345678","session_id":"s"}` {
			t.Errorf("spooled %s, want the first call kept", b)
		}
	})
	t.Run("ErrKey", func(t *testing.T) {
		s := &Spool{Dir: t.TempDir(), Now: time.Now}
		for _, k := range []string{"short", "../../etc/passwd", "a b c d e f g h"} {
			if err := s.Put(k, "t", nil); err == nil {
				t.Errorf("Put(%q) succeeded", k)
			}
		}
	})
	t.Run("ErrFull", func(t *testing.T) {
		s := &Spool{Dir: t.TempDir(), Now: time.Now}
		for i := 0; i < SpoolMaxEntries; i++ {
			if err := os.WriteFile(filepath.Join(s.Dir, "k"+padInt(i)+".json"), []byte("{}"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Put("one-more-key", "t", map[string]any{}); err == nil {
			t.Error("Put into a full spool succeeded")
		}
	})
}

func padInt(i int) string {
	b := []byte("0000000")
	for j := len(b) - 1; i > 0; j-- {
		b[j] = byte('0' + i%10)
		i /= 10
	}
	return string(b)
}

// TestSpool_Due: a call no drainer tried is due at once; one that failed is
// due again only after the backoff.
func TestSpool_Due(t *testing.T) {
	t.Parallel()
	now := time.Now()
	s := &Spool{Dir: t.TempDir(), Now: func() time.Time { return now }}
	if s.Due(now, time.Minute) {
		t.Error("an empty spool is due")
	}
	if err := s.Put("key-00000001", "t", map[string]any{}); err != nil {
		t.Fatal(err)
	}
	if !s.Due(now, time.Minute) {
		t.Error("an untried call is not due")
	}
	b, _ := json.Marshal(Spooled{Tool: "t", Args: json.RawMessage(`{}`), Created: now, Attempts: 1})
	p := filepath.Join(s.Dir, "key-00000001.json")
	os.WriteFile(p, b, 0o600)
	if s.Due(now, time.Minute) {
		t.Error("a call that just failed is due")
	}
	if !s.Due(now.Add(2*time.Minute), time.Minute) {
		t.Error("a call that failed before the backoff is not due")
	}
}

// TestSpool_Lock: one drain at a time; the lock is free again when its
// holder lets go.
func TestSpool_Lock(t *testing.T) {
	t.Parallel()
	s := &Spool{Dir: t.TempDir(), Now: time.Now}
	unlock, ok, err := s.lock()
	if err != nil || !ok {
		t.Fatalf("first lock: %v %v", ok, err)
	}
	if _, ok2, err := s.lock(); err != nil || ok2 {
		t.Fatalf("second lock while held: %v %v, want refused", ok2, err)
	}
	unlock()
	unlock3, ok3, err := s.lock()
	if err != nil || !ok3 {
		t.Fatalf("lock after release: %v %v", ok3, err)
	}
	unlock3()
}

// TestPathState resolves path anchors against a checkout: present is
// available, missing (or no checkout) unavailable, and a path that is not
// the checkout's to judge is left alone.
func TestPathState(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "src"), 0o755)
	os.WriteFile(filepath.Join(root, "src", "a.go"), nil, 0o644)
	for _, tc := range []struct{ root, rel, want string }{
		{root, "src/a.go", "available"},
		{root, "src", "available"},
		{root, "src/b.go", "unavailable"},
		{"", "src/a.go", "unavailable"},
		{root, "/etc/passwd", ""},
		{root, "../outside", ""},
		{root, "src/../../outside", ""},
		{root, "", ""},
	} {
		if got := pathState(tc.root, tc.rel); got != tc.want {
			t.Errorf("pathState(%q, %q) = %q, want %q", tc.root, tc.rel, got, tc.want)
		}
	}
}

// TestPathState_Symlinks holds issue 41 item 11: a path anchor is resolved
// through symbolic links one step at a time and never judged once a link
// leads out of the checkout (absolute, or up past its root), so the hook
// tells the server nothing of what exists outside; links that stay inside
// are followed.
func TestPathState_Symlinks(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	root, outside := filepath.Join(base, "repo"), filepath.Join(base, "outside")
	for _, d := range []string{filepath.Join(root, "src", "deep"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(root, "src", "a.go"), nil, 0o644)
	os.WriteFile(filepath.Join(outside, "secret"), nil, 0o600)
	links := map[string]string{
		"abs":             outside,                    // absolute, out
		"up":              "../outside",               // relative, out
		"src/deep/climb":  "../../../outside",         // relative, out from deeper
		"src/deep/toroot": "../..",                    // relative, to the root: inside
		"code":            "src",                      // relative, inside
		"dangling":        "src/gone.go",              // inside, missing
		"loop":            "loop",                     // a loop
		"self":            filepath.Join(root, "src"), // absolute, even inside
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(root, filepath.FromSlash(name))); err != nil {
			t.Skipf("no symbolic links here: %v", err)
		}
	}
	rootLink := filepath.Join(base, "repo-link") // the checkout reached through a link
	if err := os.Symlink(root, rootLink); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ root, rel, want string }{
		{root, "abs/secret", ""},
		{root, "abs/missing", ""},
		{root, "abs", ""},
		{root, "up/secret", ""},
		{root, "up/missing", ""},
		{root, "src/deep/climb/secret", ""},
		{root, "src/deep/climb/missing", ""},
		{root, "src/deep/toroot/src/a.go", "available"},
		// ".." in the anchor is taken lexically, as git's paths are: this
		// names src/deep/outside/secret, inside and missing.
		{root, "src/deep/toroot/../outside/secret", "unavailable"},
		{root, "code/a.go", "available"},
		{root, "code/b.go", "unavailable"},
		{root, "dangling", "unavailable"},
		{root, "loop", ""},
		{root, "self/a.go", ""},
		{rootLink, "src/a.go", "available"},
		{rootLink, "up/secret", ""},
	} {
		if got := pathState(tc.root, tc.rel); got != tc.want {
			t.Errorf("pathState(%q, %q) = %q, want %q", tc.root, tc.rel, got, tc.want)
		}
	}
}
