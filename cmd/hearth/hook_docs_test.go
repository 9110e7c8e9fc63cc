package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/cmd/hearth/internal/hook"
)

// TestHookDocs_Limits: the client pages state the limits the hooks enforce,
// from the constants themselves, so a changed limit fails until the docs
// follow.
func TestHookDocs_Limits(t *testing.T) {
	t.Parallel()
	days := func(d time.Duration) string { return fmt.Sprintf("%d days", int(d.Hours()/24)) }
	ms := func(d time.Duration) string { return fmt.Sprintf("%d ms", d.Milliseconds()) }
	common := []string{
		ms(hook.PromptDeadline),
		fmt.Sprintf("%d,%03d characters", hook.MaxContextChars/1000, hook.MaxContextChars%1000),
		fmt.Sprintf("%v", hook.DefaultMinCosine),
		fmt.Sprintf("| %d |", hook.DefaultRecallLimit),
		fmt.Sprintf("session start %d s", int(hook.SessionStartDeadline.Seconds())),
	}
	claude := append(common,
		fmt.Sprintf("newest %d ids", hook.MaxShown),
		fmt.Sprintf("%s are removed", days(hook.StateMaxAge)),
		fmt.Sprintf("up to %s or %d attempts", days(hook.SpoolMaxAge), hook.SpoolMaxAttempts),
	)
	for file, want := range map[string][]string{"claude-code.md": claude, "codex.md": common, "gemini-cli.md": common} {
		b, err := os.ReadFile(filepath.Join("..", "..", "docs", file))
		if err != nil {
			t.Fatal(err)
		}
		doc := strings.Join(strings.Fields(string(b)), " ")
		for _, w := range want {
			if !strings.Contains(doc, w) {
				t.Errorf("docs/%s does not say %q", file, w)
			}
		}
	}
}
