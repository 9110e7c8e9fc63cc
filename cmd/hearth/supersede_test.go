package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRun_InvalidOption holds R-O: an invalid option fails start, naming it.
func TestRun_InvalidOption(t *testing.T) {
	t.Parallel()
	t.Run("Flag", func(t *testing.T) {
		var out, errb bytes.Buffer
		code := run(context.Background(), []string{"serve", "--data", t.TempDir(), "--listen", "127.0.0.1:0", "--option", "anchor_sweep_hours=0"}, &out, &errb)
		if code == 0 || !strings.Contains(errb.String(), "anchor_sweep_hours") {
			t.Errorf("exit %d, stderr %q: want failure naming anchor_sweep_hours", code, errb.String())
		}
	})
	t.Run("File", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "options.json"), []byte(`{"review_at": "25:00"}`), 0o600); err != nil {
			t.Fatal(err)
		}
		var out, errb bytes.Buffer
		code := run(context.Background(), []string{"serve", "--data", dir, "--listen", "127.0.0.1:0"}, &out, &errb)
		if code == 0 || !strings.Contains(errb.String(), "review_at") {
			t.Errorf("exit %d, stderr %q: want failure naming review_at", code, errb.String())
		}
	})
}
