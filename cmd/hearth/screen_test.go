package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hearth-memory/hearth/server/servertest"
)

// Fake secrets of several patterns (made up, right shape). The test proves
// none of them reaches the database, its WAL, the logs or an error.
var (
	secretAWS     = "AKIAQX7WZJ3N5R2T4V6Y"
	secretGitHub  = servertest.SecretGitHub
	secretPEM     = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\nQyNTUxOQAAACDx7Rk2mQp9VwLz3nY8cT4hJ6sB0aF5eG1iK2oU3pX9dQAAAJg=\n-----END OPENSSH PRIVATE KEY-----"
	secretURLPass = "Pw9xTq2LmZ4v"
	secretParam   = "Zq8Rt5Wm2Xn7Kp4V"
	secretMarker  = "do-not-store"
)

// syncBuffer collects the daemon's log output.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// injection puts one secret into one field of a valid request.
type injection struct {
	field   string // the field the error must name, e.g. changes.anchors[0]
	value   any    // the value to set (a string, or a list for list fields)
	secret  string // the secret span that must never be stored or echoed
	pattern bool   // the screen (not format validation) must name a pattern
	// dropped: the call succeeds but the field is refused and not stored
	// (session notes, R-S4).
	dropped bool
	// line: the call succeeds, and the one line (of memory_import) is
	// reported failed with field and pattern, and nothing stored.
	line bool
}

// writeCase is a valid request for one writing tool and the injections for
// its free-text fields.
type writeCase struct {
	args   func(t *testing.T) map[string]any
	inject []injection
}

// importLine is one JSON line for memory_import.
func importLine(rec map[string]any) string {
	b, _ := json.Marshal(rec)
	return string(b) + "\n"
}

// captureEvent is one clean captured command event for memory_capture,
// with the fields of set replaced (a nil value removes the field).
func captureEvent(ns string, set map[string]any) map[string]any {
	ev := map[string]any{"id": "screen-event-1", "session_id": "s-screen", "harness": "claude-code", "namespace": ns,
		"kind": "command", "command": "go test ./screen/...", "ok": false, "exit_code": 1,
		"tests": []string{"TestScreen"}, "errors": []string{"--- FAIL: TestScreen"}, "at": "2026-12-07T01:00:00Z"}
	for k, v := range set {
		if v == nil || v == "" {
			delete(ev, k)
			continue
		}
		ev[k] = v
	}
	return ev
}

// setField sets a dotted path (a.b) in args.
func setField(args map[string]any, path string, v any) {
	parts := strings.Split(path, ".")
	m := args
	for _, p := range parts[:len(parts)-1] {
		next, ok := m[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[p] = next
		}
		m = next
	}
	m[parts[len(parts)-1]] = v
}

func stripIndex(field string) string {
	if i := strings.IndexByte(field, '['); i >= 0 {
		return field[:i]
	}
	return field
}

// TestScreen_EveryWritePath holds R-S1..R-S4 and R-S6 for every RPC that
// persists text: each one refuses secrets in each free-text field, naming the
// field and pattern, writing nothing, and no secret reaches the database
// files, the WAL, the logs or the error text. A writing RPC without a case
// here fails the test.
func TestScreen_EveryWritePath(t *testing.T) {
	t.Parallel()
	logs := &syncBuffer{}
	dir := t.TempDir()
	// Every scope, so that the admin tools that write are covered too.
	td := openDaemon(t, &Daemon{Config: Config{DataDir: dir, Options: parityOptions()}, Log: slog.New(slog.NewTextHandler(logs, nil))}, false)
	d := td.Daemon
	defer td.conn.Close()
	defer d.Close(context.Background())
	tok := td.tokens["claude-code"]
	rest := restTransport{td}
	ns := "github/acme/screen"
	record := func(t *testing.T) (string, float64) {
		r := rest.call(t, tok, "memory_store", storeArgs(ns, "Screen target", "A record to write against."))
		if !r.ok {
			t.Fatalf("store: %v", r)
		}
		return str(r.body, "record", "id"), num(r.body, "record", "revision")
	}
	text := []injection{
		{field: "title", value: "key " + secretAWS, secret: secretAWS, pattern: true},
		{field: "content", value: "export GITHUB_TOKEN=" + secretGitHub, secret: secretGitHub, pattern: true},
		{field: "content", value: "the deploy key:\n" + secretPEM, secret: secretPEM[40:90], pattern: true},
		{field: "content", value: "note " + secretMarker + " this", secret: secretMarker + " this", pattern: true},
		{field: "anchors[0]", value: []string{"url:https://deploy:" + secretURLPass + "@ci.example.com/hook"}, secret: secretURLPass, pattern: true},
		{field: "anchors[0]", value: []string{"url:https://ci.example.com/hook?access_token=" + secretParam}, secret: secretParam, pattern: true},
		{field: "topics[0]", value: []string{secretGitHub}, secret: secretGitHub},
	}
	prefixed := func(prefix string, in []injection) []injection {
		out := make([]injection, len(in))
		for i, x := range in {
			x.field = prefix + x.field
			out[i] = x
		}
		return out
	}
	cases := map[string]writeCase{
		"memory_store": {
			args: func(t *testing.T) map[string]any { return storeArgs(ns, "Clean title", "Clean content.") },
			// A namespace's charset is narrow, but the marker fits in it.
			inject: append(slices.Clip(text), injection{field: "namespace", value: "projects/" + secretMarker, secret: secretMarker, pattern: true}),
		},
		"memory_update": {
			args: func(t *testing.T) map[string]any {
				id, rev := record(t)
				return map[string]any{"id": id, "revision": rev, "changes": map[string]any{"title": "Clean change"}}
			},
			inject: prefixed("changes.", text),
		},
		"memory_forget": {
			args: func(t *testing.T) map[string]any {
				id, _ := record(t)
				return map[string]any{"id": id}
			},
			inject: []injection{{field: "reason", value: "leaked " + secretGitHub, secret: secretGitHub, pattern: true}},
		},
		"memory_evidence": {
			args: func(t *testing.T) map[string]any {
				id, _ := record(t)
				return map[string]any{"id": id, "stance": "corroborates"}
			},
			inject: []injection{{field: "note", value: "checked with " + secretAWS, secret: secretAWS, pattern: true}},
		},
		"memory_question_add": {
			args: func(t *testing.T) map[string]any {
				return map[string]any{"namespace": ns, "text": "How do we rotate the deploy keys?"}
			},
			inject: []injection{
				{field: "text", value: "where is " + secretGitHub, secret: secretGitHub, pattern: true},
				{field: "text", value: "how to use " + secretAWS, secret: secretAWS, pattern: true},
				{field: "namespace", value: "projects/" + secretMarker, secret: secretMarker, pattern: true},
			},
		},
		"memory_anchor_report": {
			args: func(t *testing.T) map[string]any {
				args := storeArgs(ns, "Anchored", "Depends on a URL.")
				args["anchors"] = []string{"url:https://ci.example.com/hook", "path:deploy/values.yaml"}
				r := rest.call(t, tok, "memory_store", args)
				if !r.ok {
					t.Fatalf("store: %v", r)
				}
				id := str(r.body, "record", "id")
				return map[string]any{"id": id, "anchor": "url:https://ci.example.com/hook", "state": "unavailable",
					"reports": []any{map[string]any{"id": id, "anchor": "path:deploy/values.yaml", "state": "available"}}}
			},
			inject: []injection{
				{field: "detail", value: "the hook answers 401 to " + secretGitHub, secret: secretGitHub, pattern: true},
				{field: "anchor", value: "url:https://deploy:" + secretURLPass + "@ci.example.com/hook", secret: secretURLPass, pattern: true},
				{field: "anchor", value: "url:https://ci.example.com/hook?access_token=" + secretParam, secret: secretParam, pattern: true},
				{field: "reports[0].detail", value: []any{map[string]any{"id": "01JD3M5ZK9Q8W7E6R5T4Y3X2V1", "anchor": "path:deploy/values.yaml",
					"state": "available", "detail": "aws " + secretAWS}}, secret: secretAWS, pattern: true},
				{field: "reports[0].anchor", value: []any{map[string]any{"id": "01JD3M5ZK9Q8W7E6R5T4Y3X2V1",
					"anchor": "url:https://ci.example.com/hook#access_token=" + secretParam, "state": "available"}}, secret: secretParam, pattern: true},
			},
		},
		// The sweep takes no text; its clean call must still pass.
		"memory_anchor_sweep": {args: func(t *testing.T) map[string]any { return map[string]any{} }},
		// Backups and rotation take no text the store keeps.
		"memory_backup":      {args: func(t *testing.T) map[string]any { return map[string]any{} }},
		"memory_model_pause": {args: func(t *testing.T) map[string]any { return map[string]any{} }},
		// Receipts are read only; a rerun keeps its model name.
		"memory_extraction_receipts": {args: func(t *testing.T) map[string]any { return map[string]any{} }},
		"memory_extraction_rerun": {
			args: func(t *testing.T) map[string]any {
				return map[string]any{"receipt_id": seedReceipt(t, td, ns), "model": "qwen3:" + strings.ReplaceAll(t.Name(), "/", "-")}
			},
			inject: []injection{{field: "model", value: "m-" + secretGitHub, secret: secretGitHub, pattern: true}},
		},
		"memory_model_resume": {args: func(t *testing.T) map[string]any { return map[string]any{} }},
		"memory_token_rotate": {args: func(t *testing.T) map[string]any { return map[string]any{"client": "codex"} }},
		"memory_import": {
			args: func(t *testing.T) map[string]any {
				return map[string]any{"lines": importLine(map[string]any{"namespace": ns, "type": "note", "title": "Clean import " + t.Name(), "content": "Clean."})}
			},
			inject: []injection{
				{field: "title", value: importLine(map[string]any{"namespace": ns, "type": "note", "title": "key " + secretAWS, "content": "x"}), secret: secretAWS, line: true},
				{field: "content", value: importLine(map[string]any{"namespace": ns, "type": "note", "title": "t", "content": "export GITHUB_TOKEN=" + secretGitHub}), secret: secretGitHub, line: true},
				{field: "anchors[0].anchor", value: importLine(map[string]any{"namespace": ns, "type": "note", "title": "t", "content": "c",
					"anchors": []any{map[string]any{"anchor": "url:https://deploy:" + secretURLPass + "@ci.example.com/hook"}}}), secret: secretURLPass, line: true},
				{field: "evidence[0].note", value: importLine(map[string]any{"namespace": ns, "type": "note", "title": "t", "content": "c",
					"evidence": []any{map[string]any{"client": "codex", "stance": "corroborates", "note": "with " + secretAWS}}}), secret: secretAWS, line: true},
				{field: "topics[0]", value: importLine(map[string]any{"namespace": ns, "type": "note", "title": "t", "content": "c", "topics": []any{secretMarker}}), secret: secretMarker, line: true},
				{field: "namespace", value: importLine(map[string]any{"namespace": "projects/" + secretMarker, "type": "note", "title": "t", "content": "c"}), secret: secretMarker, line: true},
				{field: "writer", value: importLine(map[string]any{"namespace": ns, "type": "note", "title": "t", "content": "c", "writer": secretMarker}), secret: secretMarker, line: true},
			},
		},
		// Captured events: the hook screens them before they are spooled,
		// and the server screens every field once more, refusing the whole
		// batch (docs/capture.md).
		"memory_capture": {
			args: func(t *testing.T) map[string]any {
				return map[string]any{"events": []any{captureEvent(ns, nil)}}
			},
			inject: []injection{
				{field: "events[0].command", value: []any{captureEvent(ns, map[string]any{"command": "deploy --token " + secretGitHub})}, secret: secretGitHub, pattern: true},
				{field: "events[0].command", value: []any{captureEvent(ns, map[string]any{"command": "curl https://deploy:" + secretURLPass + "@ci.example.com/hook"})}, secret: secretURLPass, pattern: true},
				{field: "events[0].path", value: []any{captureEvent(ns, map[string]any{"kind": "edit", "command": "", "ok": true, "exit_code": nil, "tests": nil, "errors": nil,
					"path": "keys/" + secretAWS + ".txt"})}, secret: secretAWS, pattern: true},
				{field: "events[0].tests[0]", value: []any{captureEvent(ns, map[string]any{"tests": []string{"TestKey " + secretAWS}})}, secret: secretAWS, pattern: true},
				{field: "events[0].errors[0]", value: []any{captureEvent(ns, map[string]any{"errors": []string{"auth failed for " + secretGitHub}})}, secret: secretGitHub, pattern: true},
				{field: "events[0].summary", value: []any{captureEvent(ns, map[string]any{"kind": "compact", "command": "", "ok": true, "exit_code": nil, "tests": nil, "errors": nil,
					"summary": "we set access_token=" + secretParam})}, secret: secretParam, pattern: true},
				{field: "events[0].session_id", value: []any{captureEvent(ns, map[string]any{"session_id": "s " + secretMarker + " this"})}, secret: secretMarker + " this", pattern: true},
				{field: "events[0].namespace", value: []any{captureEvent(ns, map[string]any{"namespace": "projects/" + secretMarker})}, secret: secretMarker, pattern: true},
			},
		},
		"memory_session_close": {
			args: func(t *testing.T) map[string]any {
				return map[string]any{"session_id": "s-screen", "namespace": ns, "op_id": "op-" + strings.NewReplacer("/", "-", "#", "-", "[", "-", "]", "-", ".", "-").Replace(t.Name()), "summary": "Worked on the screen."}
			},
			inject: []injection{
				{field: "summary", value: "token " + secretGitHub, secret: secretGitHub, pattern: true},
				{field: "namespace", value: "topics/" + secretMarker, secret: secretMarker, pattern: true},
				{field: "notes", value: "the wifi password is on the fridge, " + secretMarker, secret: "wifi password is on the fridge", dropped: true},
				{field: "notes", value: "aws " + secretAWS, secret: secretAWS, dropped: true},
			},
		},
	}

	var secrets []string
	for _, r := range routes(t) {
		tool := r.Tool
		if tool.GetReadOnly() {
			continue
		}
		t.Run(tool.GetName(), func(t *testing.T) {
			c, ok := cases[tool.GetName()]
			if !ok {
				t.Fatalf("%s writes but has no screening case: add one", tool.GetName())
			}
			if r := rest.call(t, tok, tool.GetName(), c.args(t)); !r.ok {
				t.Fatalf("the clean request fails: %v", r)
			}
			for _, in := range c.inject {
				secrets = append(secrets, in.secret)
				t.Run(in.field, func(t *testing.T) {
					args := c.args(t)
					if in.line {
						args["lines"] = in.value
					} else {
						setField(args, stripIndex(in.field), in.value)
					}
					before := rest.call(t, tok, "memory_status", map[string]any{})
					for _, tr := range []transport{rest, mcpTransport{td: td}} {
						r := tr.call(t, tok, tool.GetName(), args)
						if strings.Contains(string(r.raw), in.secret) {
							t.Errorf("%s: the reply echoes the secret: %s", tr.name(), r.raw)
						}
						if in.line {
							failed := list(r.body, "failed")
							if !r.ok || len(failed) != 1 || str(failed[0], "field") != in.field {
								t.Errorf("%s: got %v, want success with the line failed naming %s", tr.name(), r, in.field)
							} else if str(failed[0], "pattern") == "" {
								t.Errorf("%s: no pattern named: %s", tr.name(), r.raw)
							}
							continue
						}
						if in.dropped {
							if !r.ok || !strings.Contains(string(r.raw), `"notes_refused":true`) {
								t.Errorf("%s: got %v, want success with notes_refused", tr.name(), r)
							}
							// A replay of the same op_id would answer from the
							// receipt: give the MCP call its own.
							args["op_id"] = args["op_id"].(string) + "-2"
							continue
						}
						if r.ok || r.code != "INVALID_ARGUMENT" || r.http != 400 {
							t.Fatalf("%s: got %v, want INVALID_ARGUMENT/400", tr.name(), r)
						}
						if got := str(r.body, "error", "field"); got != in.field {
							t.Errorf("%s: field = %q, want %q", tr.name(), got, in.field)
						}
						if in.pattern && str(r.body, "error", "pattern") == "" {
							t.Errorf("%s: no pattern named: %s", tr.name(), r.raw)
						}
					}
					if in.dropped {
						return
					}
					after := rest.call(t, tok, "memory_status", map[string]any{})
					if !sameRecords(before, after) {
						t.Errorf("a refused write changed the store:\nbefore %s\nafter  %s", before.raw, after.raw)
					}
				})
			}
		})
	}

	// A search for a secret is answered and leaves no trace (R-S5).
	r := rest.call(t, tok, "memory_search", map[string]any{"namespace": ns, "query": "where is " + secretGitHub})
	if !r.ok {
		t.Errorf("secret query: %v", r)
	}

	// Refusals are audited by field and pattern, never by value (R-S2).
	entries, err := d.db.AuditLog(context.Background(), 1000)
	if err != nil {
		t.Fatal(err)
	}
	var screened int
	for _, e := range entries {
		if e.Action == "refuse.screen" {
			screened++
			if !strings.Contains(e.Detail.String(), "pattern ") {
				t.Errorf("audit detail %q does not name the pattern", e.Detail.String())
			}
		}
	}
	if screened == 0 {
		t.Errorf("no refuse.screen audit rows")
	}

	// Nothing secret on disk or in the logs: close the daemon first so the
	// WAL is as it was written, then read every file of the data dir.
	d.Close(context.Background())
	var disk []byte
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() && filepath.Dir(p) != d.TokensDir() {
			b, _ := os.ReadFile(p)
			disk = append(disk, b...)
		}
		return nil
	})
	log := logs.String()
	for _, s := range secrets {
		if bytes.Contains(disk, []byte(s)) {
			t.Errorf("secret %.12q… found in the data files", s)
		}
		if strings.Contains(log, s) {
			t.Errorf("secret %.12q… found in the logs", s)
		}
	}
	for name, tk := range td.tokens {
		if strings.Contains(log, tk) {
			t.Errorf("token of %s found in the logs", name)
		}
		if bytes.Contains(disk, []byte(tk)) {
			t.Errorf("token of %s found in the database files", name)
		}
	}
	raw, _ := json.Marshal(entries)
	if strings.Contains(string(raw), secretGitHub) {
		t.Errorf("audit carries a secret")
	}
}
