package connect

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hearth-memory/hearth/storage/fileio"
)

// Paths are the settings files --apply changes.
type Paths struct {
	// MCP is ~/.claude.json (Claude Code), ~/.codex/config.toml (Codex) or
	// ~/.copilot/mcp-config.json (Copilot) or ~/.gemini/settings.json
	// (Gemini CLI).
	MCP string
	// Hooks is ~/.claude/settings.json (Claude Code), ~/.codex/hooks.json,
	// ~/.copilot/hooks/hearth.json, or Gemini CLI's one settings.json again.
	Hooks string
}

// SettingsPaths returns where harness keeps its settings: for Claude Code
// $CLAUDE_CONFIG_DIR (else ~/.claude, with ~/.claude.json beside it); for
// Codex $CODEX_HOME (else ~/.codex).
func SettingsPaths(harness string, env func(string) string) (Paths, error) {
	home := env("HOME")
	switch harness {
	case ClaudeCode:
		if d := env("CLAUDE_CONFIG_DIR"); d != "" {
			return Paths{MCP: filepath.Join(d, ".claude.json"), Hooks: filepath.Join(d, "settings.json")}, nil
		}
		if home == "" {
			return Paths{}, errors.New("HOME is not set")
		}
		return Paths{MCP: filepath.Join(home, ".claude.json"), Hooks: filepath.Join(home, ".claude", "settings.json")}, nil
	case Copilot:
		return copilotPaths(env)
	case Codex:
		d := env("CODEX_HOME")
		if d == "" {
			if home == "" {
				return Paths{}, errors.New("HOME is not set")
			}
			d = filepath.Join(home, ".codex")
		}
		return Paths{MCP: filepath.Join(d, "config.toml"), Hooks: filepath.Join(d, "hooks.json")}, nil
	case OpenCode:
		d, err := openCodeConfigDir(env)
		return Paths{MCP: filepath.Join(d, "opencode.json"), Hooks: filepath.Join(d, "plugins", OpenCodePluginName)}, err
	case GeminiCLI:
		f, err := geminiSettingsPath(env)
		return Paths{MCP: f, Hooks: f}, err
	}
	return Paths{}, unknownHarness(harness)
}

// Change is one file --apply wrote, with the backup of what it held.
type Change struct {
	Path, Backup string
}

// Apply merges the MCP registration and the hooks of o into the settings at
// p. Every other entry stays as it was; each file that changes is first
// copied to <file>.hearth-backup-<time>. A file whose content would not
// change is not written. A file that cannot be read as its format is left
// alone and reported.
func Apply(o Options, p Paths, now time.Time) ([]Change, error) {
	var changes []Change
	var mcp func([]byte) ([]byte, error)
	hooks := func(old []byte) ([]byte, error) { return mergeHooksFile(old, Hooks(o)) }
	switch o.Harness {
	case ClaudeCode:
		mcp = func(old []byte) ([]byte, error) { return mergeServer(old, "mcpServers", ClaudeMCPServer(o)) }
	case Codex:
		mcp = func(old []byte) ([]byte, error) { return mergeCodexMCP(old, CodexMCPTOML(o)), nil }
	case Copilot:
		mcp = func(old []byte) ([]byte, error) { return mergeServer(old, "mcpServers", CopilotMCPServer(o)) }
	case OpenCode:
		mcp = func(old []byte) ([]byte, error) { return mergeServer(old, "mcp", OpenCodeMCPServer(o)) }
		hooks = func(old []byte) ([]byte, error) { return mergeOpenCodePlugin(old, o) }
	case GeminiCLI:
		return applyGemini(o, p, now)
	default:
		return nil, unknownHarness(o.Harness)
	}
	for _, f := range []struct {
		path  string
		merge func([]byte) ([]byte, error)
	}{
		{p.MCP, mcp},
		{p.Hooks, hooks},
	} {
		c, err := rewrite(f.path, f.merge, now)
		if err != nil {
			return changes, err
		}
		if c != nil {
			changes = append(changes, *c)
		}
	}
	return changes, nil
}

// rewrite applies merge to the file at path (empty when missing), backs the
// old content up, and writes the new one atomically with the old mode
// (0600 for a new file).
func rewrite(path string, merge func([]byte) ([]byte, error), now time.Time) (*Change, error) {
	old, err := os.ReadFile(path)
	mode := os.FileMode(0o600)
	exists := err == nil
	switch {
	case exists:
		if fi, err := os.Stat(path); err == nil {
			mode = fi.Mode().Perm()
		}
	case !errors.Is(err, os.ErrNotExist):
		return nil, err
	}
	updated, err := merge(old)
	if err != nil {
		return nil, fmt.Errorf("%s: %w; left unchanged", path, err)
	}
	if exists && bytes.Equal(old, updated) {
		return nil, nil
	}
	c := &Change{Path: path}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	if exists {
		if c.Backup, err = backup(path, old, now); err != nil {
			return nil, err
		}
	}
	return c, fileio.WriteAtomic(path, updated, mode)
}

// maxBackups bounds the names backup tries for one second.
const maxBackups = 1000

// backup writes content, path's content before --apply changes it, to a
// new file <path>.hearth-backup-<time>, or -2, -3, … after it when a backup
// of the same second exists: an earlier backup is never overwritten, so
// the original settings survive any number of runs. The backup is synced
// before the caller replaces path.
func backup(path string, content []byte, now time.Time) (string, error) {
	stem := path + ".hearth-backup-" + now.UTC().Format("20060102T150405Z")
	for i := 1; i <= maxBackups; i++ {
		name := stem
		if i > 1 {
			name = fmt.Sprintf("%s-%d", stem, i)
		}
		err := fileio.Create(name, func(w io.Writer) error {
			_, err := w.Write(content)
			return err
		})
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("backup of %s: %w; left unchanged", path, err)
		}
		return name, nil
	}
	return "", fmt.Errorf("backup of %s: %d backups of this second exist; left unchanged", path, maxBackups)
}

// mergeServer sets <key>.hearth to server in a JSON settings file:
// mcpServers in ~/.claude.json (and in Copilot's mcp-config.json, which
// has the same shape), mcp in opencode.json.
func mergeServer(old []byte, key string, server *Object) ([]byte, error) {
	root, err := ParseObject(old)
	if err != nil {
		return nil, err
	}
	servers, err := ParseObject(root.Get(key))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	servers.Set(ServerName, server.Compact())
	root.Set(key, servers.Compact())
	return []byte(root.Indent() + "\n"), nil
}

// mergeHooksFile merges Hearth's hooks into a settings or hooks.json file.
func mergeHooksFile(old []byte, ours *Object) ([]byte, error) {
	root, err := ParseObject(old)
	if err != nil {
		return nil, err
	}
	hooks, err := ParseObject(root.Get("hooks"))
	if err != nil {
		return nil, fmt.Errorf("hooks: %w", err)
	}
	for _, event := range ours.Keys() {
		var groups []json.RawMessage
		if raw := hooks.Get(event); raw != nil {
			if err := json.Unmarshal(raw, &groups); err != nil {
				return nil, fmt.Errorf("hooks.%s: %w", event, err)
			}
		}
		kept := make([]json.RawMessage, 0, len(groups)+1)
		for _, g := range groups {
			g, err := withoutOwnHandlers(g)
			if err != nil {
				return nil, fmt.Errorf("hooks.%s: %w", event, err)
			}
			if g != nil {
				kept = append(kept, g)
			}
		}
		var mine []json.RawMessage
		if err := json.Unmarshal(ours.Get(event), &mine); err != nil {
			return nil, err
		}
		kept = append(kept, mine...)
		hooks.Set(event, mustJSON(kept))
	}
	root.Set("hooks", hooks.Compact())
	return []byte(root.Indent() + "\n"), nil
}

// withoutOwnHandlers drops Hearth's handlers from a matcher group, and the
// group itself when nothing else is left in it (nil).
func withoutOwnHandlers(raw json.RawMessage) (json.RawMessage, error) {
	g, err := ParseObject(raw)
	if err != nil {
		return nil, err
	}
	var handlers []json.RawMessage
	if h := g.Get("hooks"); h != nil {
		if err := json.Unmarshal(h, &handlers); err != nil {
			return nil, err
		}
	}
	kept := handlers[:0:0]
	for _, h := range handlers {
		var cmd struct {
			Command string `json:"command"`
		}
		if json.Unmarshal(h, &cmd) == nil && ownHook(cmd.Command) {
			continue
		}
		kept = append(kept, h)
	}
	if len(kept) == len(handlers) {
		return raw, nil
	}
	if len(kept) == 0 {
		return nil, nil
	}
	g.Set("hooks", mustJSON(kept))
	return g.Compact(), nil
}

// mergeCodexMCP replaces the [mcp_servers.hearth] table of a config.toml
// (with its sub-tables) by table, or appends table at the end. Tables come
// after every top-level key in TOML, so appending cannot capture one.
func mergeCodexMCP(old []byte, table string) []byte {
	lines := strings.SplitAfter(string(old), "\n")
	var out []string
	skipping, replaced := false, false
	for _, line := range lines {
		if line == "" {
			continue
		}
		if name, ok := tomlTableName(line); ok {
			own := name == "mcp_servers."+ServerName || strings.HasPrefix(name, "mcp_servers."+ServerName+".")
			if own && !replaced {
				out = append(out, table)
				replaced = true
			}
			skipping = own
		}
		if !skipping {
			out = append(out, line)
		}
	}
	s := strings.Join(out, "")
	if !replaced {
		if s != "" && !strings.HasSuffix(s, "\n") {
			s += "\n"
		}
		if s != "" {
			s += "\n"
		}
		s += table
	}
	return []byte(s)
}

// tomlTableName reads a [table] or [[array]] header line, with quoted keys
// unquoted ("a"."b" reads as a.b).
func tomlTableName(line string) (string, bool) {
	t := strings.TrimSpace(line)
	if !strings.HasPrefix(t, "[") {
		return "", false
	}
	t = strings.TrimLeft(t, "[")
	end := strings.Index(t, "]")
	if end < 0 {
		return "", false
	}
	var parts []string
	for _, p := range strings.Split(t[:end], ".") {
		parts = append(parts, strings.Trim(strings.TrimSpace(p), `"'`))
	}
	return strings.Join(parts, "."), true
}
