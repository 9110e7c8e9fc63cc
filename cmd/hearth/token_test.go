package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hearth-memory/hearth/server/options"
	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/testwait"
)

// generatedClients names, sorted, the clients of o whose tokens Hearth
// generates: those with neither an address nor a token digest.
func generatedClients(o options.Options) []string {
	var names []string
	for _, c := range o.Clients {
		if !c.IP.IsValid() && c.TokenSHA256 == "" {
			names = append(names, c.Name)
		}
	}
	slices.Sort(names)
	return names
}

func tokenFileText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// TestToken_Rotate holds rotation: after `hearth token rotate` the old
// token fails at once over REST, MCP and gRPC and the new one works; the
// file is replaced with mode 0600; the rotation and the first generation
// are audited; and after a restart, or a restore of an older database, the
// token file still decides (R-A7, with memory_token_rotate below).
func TestToken_Rotate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	td := openDaemon(t, &Daemon{Config: Config{DataDir: dir, Options: parityOptions()}}, false)
	old := td.tokens["codex"]
	admin := tokenFile(td, "claude-code")

	gen := auditEntries(t, td.db, storage.ActionTokenGenerate)
	if generated := len(generatedClients(parityOptions())); len(gen) != generated || generated < 2 {
		t.Errorf("token.generate rows: %+v, want one per generated client", gen)
	}

	code, stdout, stderr := cli(t, "token", "rotate", "--client", "codex", "--data", dir, "--url", td.url, "--token-file", admin)
	if code != 0 || !strings.Contains(stdout, tokenFile(td, "codex")) {
		t.Fatalf("rotate: exit %d %q %q", code, stdout, stderr)
	}
	if strings.Contains(stdout+stderr, old) {
		t.Errorf("the CLI printed a token")
	}
	fresh := tokenFileText(t, tokenFile(td, "codex"))
	if fresh == old || !strings.HasPrefix(fresh, "hearth_") {
		t.Fatalf("new token %q: want a new generated token", fresh[:8])
	}
	if fi, _ := os.Stat(tokenFile(td, "codex")); fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v, want 0600", fi.Mode().Perm())
	}
	for _, tr := range transports(td) {
		r := tr.call(t, old, "memory_whoami", map[string]any{})
		if r.ok || r.code != "UNAUTHENTICATED" || r.http != 401 {
			t.Errorf("%s: old token: %v, want UNAUTHENTICATED 401", tr.name(), r)
		}
		r = tr.call(t, fresh, "memory_whoami", map[string]any{})
		if !r.ok || str(r.body, "client") != "codex" {
			t.Errorf("%s: new token: %v, want codex", tr.name(), r)
		}
	}
	rot := auditEntries(t, td.db, storage.ActionTokenRotate)
	if len(rot) != 1 || rot[0].Client != "claude-code" || rot[0].Detail.String() != "client codex" {
		t.Errorf("token.rotate rows %+v, want one by claude-code", rot)
	}
	r := restTransport{td}.call(t, td.tokens["claude-code"], "memory_tokens", map[string]any{})
	var codex map[string]any
	for _, c := range list(r.body, "clients") {
		if str(c, "client") == "codex" {
			codex, _ = c.(map[string]any)
		}
	}
	if str(codex, "kind") != "generated" || str(codex, "token_path") != tokenFile(td, "codex") || str(codex, "updated_at") == "" {
		t.Errorf("memory_tokens: %s", r.raw)
	}
	if strings.Contains(string(r.raw), fresh) {
		t.Errorf("memory_tokens shows a token")
	}
	closeDaemon(t, td)

	t.Run("OKOffline", func(t *testing.T) {
		code, stdout, stderr := cli(t, "token", "rotate", "--client", "codex", "--data", dir)
		if code != 0 || !strings.Contains(stdout, "(no server running)") {
			t.Fatalf("offline rotate: exit %d %q %q", code, stdout, stderr)
		}
		third := tokenFileText(t, filepath.Join(dir, "tokens", "codex"))
		td := startDaemon2(t, dir)
		for _, tok := range []string{old, fresh} {
			if r := (restTransport{td}).call(t, tok, "memory_whoami", map[string]any{}); r.ok {
				t.Errorf("a rotated-out token still works after restart")
			}
		}
		if r := (restTransport{td}).call(t, third, "memory_whoami", map[string]any{}); !r.ok {
			t.Errorf("the offline rotated token: %v", r)
		}
	})

	t.Run("OKFileDecidesAfterRestore", func(t *testing.T) {
		// A backup holding the current digest, then a rotation, then a
		// restore of that backup: the database's digest is older than the
		// file, and the file's token must still work.
		backup := filepath.Join(t.TempDir(), "before.db")
		if code, _, stderr := cli(t, "backup", "--data", dir, "--out", backup); code != 0 {
			t.Fatal(stderr)
		}
		if code, _, stderr := cli(t, "token", "rotate", "--client", "codex", "--data", dir); code != 0 {
			t.Fatal(stderr)
		}
		current := tokenFileText(t, filepath.Join(dir, "tokens", "codex"))
		if code, _, stderr := cli(t, "restore", "--data", dir, backup); code != 0 {
			t.Fatal(stderr)
		}
		td := startDaemon2(t, dir)
		if r := (restTransport{td}).call(t, current, "memory_whoami", map[string]any{}); !r.ok {
			t.Errorf("the token file's token after a restore: %v", r)
		}
		sum := sha256.Sum256([]byte(current))
		hash, _, _ := td.db.ClientTokenHash(context.Background(), "codex")
		if hash != hex.EncodeToString(sum[:]) {
			t.Errorf("stored digest not updated from the file")
		}
		rows := auditEntries(t, td.db, storage.ActionTokenRotate)
		if len(rows) == 0 || !strings.Contains(rows[0].Detail.String(), "the token file differs") {
			t.Errorf("no audit row for the digest taken from the file: %+v", rows)
		}
	})

	t.Run("Errors", func(t *testing.T) {
		o := parityOptions()
		o.Clients = append(o.Clients, options.Client{Name: "ci", Scopes: []options.Scope{options.ScopeRead}, TokenSHA256: strings.Repeat("ab", 32)})
		td := startDaemon(t, o)
		tok := td.tokens["claude-code"]
		for _, c := range []struct{ client, code, field string }{
			{"ci", "FAILED_PRECONDITION", "client"},
			{"lan-reader", "FAILED_PRECONDITION", "client"},
			{"nobody", "NOT_FOUND", "client"},
			{"Not A Name", "INVALID_ARGUMENT", "client"},
		} {
			r := restTransport{td}.call(t, tok, "memory_token_rotate", map[string]any{"client": c.client})
			if r.ok || r.code != c.code || str(r.body, "error", "field") != c.field {
				t.Errorf("rotate %s: %v, want %s naming %s", c.client, r, c.code, c.field)
			}
		}
		r := restTransport{td}.call(t, td.tokens["codex"], "memory_token_rotate", map[string]any{"client": "codex"})
		if r.ok || r.code != "PERMISSION_DENIED" {
			t.Errorf("rotate without admin: %v, want PERMISSION_DENIED", r)
		}
	})
}

// TestToken_Show holds that `hearth token show` prints the path, and the
// token only with --reveal and only to a terminal.
func TestToken_Show(t *testing.T) {
	t.Parallel()
	td := startDaemon(t, parityOptions())
	dir := td.Config.DataDir
	tok := td.tokens["codex"]
	code, stdout, _ := cli(t, "token", "show", "--client", "codex", "--data", dir)
	if code != 0 || strings.TrimSpace(stdout) != tokenFile(td, "codex") {
		t.Errorf("show: exit %d %q, want the path alone", code, stdout)
	}
	code, stdout, stderr := cli(t, "token", "show", "--client", "codex", "--data", dir, "--reveal")
	if code != 1 || strings.Contains(stdout+stderr, tok) || !strings.Contains(stderr, "only to a terminal") {
		t.Errorf("--reveal into a pipe: exit %d %q %q, want a refusal without the token", code, stdout, stderr)
	}
	if code, _, _ := cli(t, "token", "show", "--client", "ci", "--data", dir); code != 1 {
		t.Errorf("show of a client without a generated token: exit %d, want 1", code)
	}
	t.Run("RevealOnTerminal", func(t *testing.T) {
		master, slave := openPTY(t)
		var errOut bytes.Buffer
		if code := run(context.Background(), []string{"token", "show", "--client", "codex", "--data", dir, "--reveal"}, slave, &errOut); code != 0 {
			t.Fatalf("exit %d %q", code, errOut.String())
		}
		slave.Close()
		var got bytes.Buffer
		buf := make([]byte, 4096)
		for !strings.Contains(got.String(), tok) {
			n, err := master.Read(buf)
			if err != nil {
				break
			}
			got.Write(buf[:n])
		}
		if !strings.Contains(got.String(), tok) {
			t.Errorf("terminal got %q, want the token", got.String())
		}
	})
}

// TestToken_MCPCheckedInPlace: over MCP, a request no tool call vouches
// for (initialize, a tool call refused for its arguments) is checked by
// the interceptor in place, with no memory_whoami call: a known token is
// served, and a token rotated a moment ago gets the 401 and is audited as
// any refused call is (issue #44).
func TestToken_MCPCheckedInPlace(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	opts := pageOptions()
	grantAdmin(&opts, "claude-code")
	td := openDaemon(t, &Daemon{Config: Config{DataDir: dir, Options: opts}}, true)
	admin, old := td.tokens["claude-code"], td.tokens["codex"]
	mcp := mcpTransport{td: td}
	initialize := map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "test", "version": "1"}}
	for range 3 {
		if code, raw := mcp.rpc(t, old, "initialize", initialize); code != http.StatusOK {
			t.Fatalf("initialize: %d %s", code, raw)
		}
	}
	if code, raw := mcp.rpc(t, old, "tools/call", map[string]any{"name": "memory_store", "arguments": map[string]any{"namespace": 7}}); code != http.StatusOK || !strings.Contains(string(raw), `"isError":true`) {
		t.Fatalf("a tool call refused for its arguments: %d %s", code, raw)
	}
	if code, stdout, stderr := cli(t, "token", "rotate", "--client", "codex", "--data", dir, "--url", td.url, "--token-file", tokenFile(td, "claude-code")); code != 0 {
		t.Fatalf("rotate: exit %d %q %q", code, stdout, stderr)
	}
	fresh := tokenFileText(t, tokenFile(td, "codex"))
	before := len(auditOf(t, td, string(storage.ActionRefuseAuth)))
	for _, method := range []string{"initialize", "ping"} {
		if code, raw := mcp.rpc(t, old, method, initialize); code != http.StatusUnauthorized || !strings.Contains(string(raw), "UNAUTHENTICATED") {
			t.Errorf("%s with the rotated token: %d %s, want 401 UNAUTHENTICATED", method, code, raw)
		}
	}
	if code, raw := mcp.rpc(t, fresh, "initialize", initialize); code != http.StatusOK {
		t.Errorf("initialize with the new token: %d %s", code, raw)
	}
	testwait.WaitFor(t, "the refusal's audit row", func() bool {
		return len(auditOf(t, td, string(storage.ActionRefuseAuth))) > before
	})
	_, _, body := scrape(t, td, admin)
	if n, ok := sample(parseMetrics(t, body), "hearth_calls_total", map[string]string{"tool": "memory_whoami"}); ok {
		t.Errorf("hearth_calls_total{tool=memory_whoami} = %v: the bridge called memory_whoami", n)
	}
}
