package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// topLevel is what the repository's root may hold (docs/design.md, "1.
// Shape"): the fixed folders of the architecture and their files, tools/
// for the generators that are modules of their own, and the two plugin
// manifests that Codex and Claude Code read from a repository's root.
var topLevel = []string{
	".agents", ".ci", ".claude-plugin", ".gitignore",
	"Makefile", "README.md", "addon", "buf.gen.yaml", "buf.yaml", "cmd", "docs",
	"gateway", "gen", "go.mod", "go.sum", "mcpbridge", "proto", "server", "storage", "tools",
}

// TestTopLevel_Fixed fails on a tracked entry of the repository's root that the
// architecture does not name: a new concern goes under the folder of its
// layer (a test helper every layer uses goes under storage/, the bottom one).
func TestTopLevel_Fixed(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs git")
	}
	out, err := exec.Command("git", "ls-files", "--full-name", ":/").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	seen := map[string]bool{}
	for _, f := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		top, _, _ := strings.Cut(f, "/")
		if top != "" && !seen[top] && !slices.Contains(topLevel, top) {
			seen[top] = true
			t.Errorf("the repository's root holds %q, which the architecture does not name", top)
		}
	}
}
