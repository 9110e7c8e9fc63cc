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
