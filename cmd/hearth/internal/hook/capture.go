package hook

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hearth-memory/hearth/storage/screen"
	"github.com/hearth-memory/hearth/storage/textcheck"
)

// Capture (docs/capture.md): `hearth hook tool` and `hearth hook compact`
// turn a harness's PostToolUse, PostToolUseFailure and PreCompact input
// into one small event — a file edited, a command run with its outcome, a
// compaction — screen it, spool it and send the spool to memory_capture.
// Nothing else of a tool's input or output leaves the machine.

// Event kinds of memory_capture.
const (
	KindEdit    = "edit"
	KindCommand = "command"
	KindCompact = "compact"
)

// Limits of a captured event (the server holds the same limits).
const (
	maxEventCommandChars = 300
	maxEventLineChars    = 200
	maxEventLines        = 3
	maxEventTests        = 5
	maxEventSummaryChars = 600
	// captureDeadline bounds a tool hook's inline delivery from process
	// start: the hook exits well within 100 ms when the server is down or
	// hung, and what it could not send waits in the spool.
	captureDeadline = 80 * time.Millisecond
	// startCaptureDeadline bounds session-start's delivery of what waits,
	// before it asks for the bootstrap (so "where we left off" is current).
	startCaptureDeadline = 300 * time.Millisecond
	// maxCaptureBatch is how many events one memory_capture call carries.
	maxCaptureBatch = 100
)

// Event is one captured event as spooled and sent to memory_capture.
type Event struct {
	ID        string    `json:"id"`
	SessionID string    `json:"session_id"`
	Harness   string    `json:"harness"`
	Namespace string    `json:"namespace,omitempty"`
	Remote    string    `json:"remote,omitempty"`
	Kind      string    `json:"kind"`
	At        time.Time `json:"at"`
	// Path is an edited file, relative to the repository's top (KindEdit).
	Path    string `json:"path,omitempty"`
	Created bool   `json:"created,omitempty"`
	// Command, OK, ExitCode, Tests and Errors describe a command run
	// (KindCommand): whether it passed, its exit code when known (-1 when
	// not), the failing tests it named and its first error lines.
	Command  string   `json:"command,omitempty"`
	OK       bool     `json:"ok,omitempty"`
	ExitCode int      `json:"exit_code,omitempty"`
	Tests    []string `json:"tests,omitempty"`
	Errors   []string `json:"errors,omitempty"`
	// Summary is where the conversation stood before a compaction (KindCompact).
	Summary string `json:"summary,omitempty"`
}

// ToolInput is the part of a PostToolUse, PostToolUseFailure or PreCompact
// input the capture reads, beside the common Input.
type ToolInput struct {
	Input
	ToolName     string          `json:"tool_name"`
	ToolInputRaw json.RawMessage `json:"tool_input"`
	ToolResponse json.RawMessage `json:"tool_response"`
	Error        string          `json:"error"`
	ToolUseID    string          `json:"tool_use_id"`
	Trigger      string          `json:"trigger"`
}

// ParseToolInput decodes a tool or compact hook's stdin: the common fields
// as ParseInput reads them, and the tool's fields where present (a field of
// another type reads as empty).
func ParseToolInput(data []byte) (ToolInput, error) {
	in, err := ParseInput(data)
	if err != nil {
		return ToolInput{}, err
	}
	var probe map[string]json.RawMessage
	_ = json.Unmarshal(data, &probe)
	t := ToolInput{Input: in, ToolInputRaw: probe["tool_input"], ToolResponse: probe["tool_response"]}
	if t.ToolResponse == nil {
		// Copilot: {"result_type", "text_result_for_llm"} (docs/copilot.md).
		t.ToolResponse = probe["tool_result"]
	}
	for name, dst := range map[string]*string{
		"tool_name": &t.ToolName, "error": &t.Error, "tool_use_id": &t.ToolUseID, "trigger": &t.Trigger,
	} {
		if raw, ok := probe[name]; ok {
			_ = json.Unmarshal(raw, dst)
		}
	}
	return t, nil
}

// Screened counts what the capture left out of one event because it
// screened as a secret; the count goes to the log, never what matched.
type Screened struct {
	Fields   int
	Patterns []string
}

// BuildEvent turns a tool hook's input into an event, or nil when there is
// nothing to capture: a tool that is neither an edit nor a command, a path
// or command the repository's exclusion file names, a read-only command
// (docs/capture.md), or a path or command that is itself a secret. Every
// text it keeps has had its <private> spans removed and passed the screen;
// tool output that screens as a secret is dropped whole.
func BuildEvent(h Harness, in ToolInput, failed bool, repo Repo, ig *Ignore, sc Scope, now time.Time) (*Event, Screened) {
	var scr Screened
	ev := &Event{SessionID: in.SessionID, Harness: string(h), At: now.UTC().Truncate(time.Millisecond)}
	setScope(ev, sc)
	var args map[string]json.RawMessage
	_ = json.Unmarshal(in.ToolInputRaw, &args)
	str := func(name string) string {
		var s string
		_ = json.Unmarshal(args[name], &s)
		return s
	}
	switch name := in.ToolName; {
	case name == "Edit" || name == "MultiEdit" || name == "Write" || name == "NotebookEdit" || name == "edit" || name == "write" ||
		name == "replace" || name == "write_file": // the last two Gemini CLI's
		p := str("file_path")
		for _, alt := range []string{"notebook_path", "path"} {
			if p == "" {
				p = str(alt) // path: Copilot's edit and create tools
			}
		}
		if p == "" {
			p = str("filePath") // OpenCode
		}
		rel, ok := relPath(repo.Root, in.Cwd, p)
		if !ok || failed || ig.Path(rel) {
			return nil, scr
		}
		ev.Kind, ev.Path = KindEdit, rel
		// Copilot names its create tool Write in these payloads; that tool
		// refuses a file that exists.
		ev.Created = name == "Write" && (h == Copilot || createdFile(in.ToolResponse)) || name == "write" && openCodeCreated(in.ToolResponse)
	case name == "apply_patch" || name == "ApplyPatch":
		// Codex: the patch text names each file it adds or updates.
		patch := str("command")
		if patch == "" {
			patch = str("input")
		}
		if patch == "" {
			patch = str("patchText") // OpenCode
		}
		rel, created := patchFile(patch)
		rel, ok := relPath(repo.Root, in.Cwd, rel)
		if !ok || failed || ig.Path(rel) {
			return nil, scr
		}
		ev.Kind, ev.Path, ev.Created = KindEdit, rel, created
	case name == "Bash" || name == "shell" || name == "exec_command" || name == "local_shell" || name == "bash" || name == "run_shell_command":
		cmd := commandText(args)
		cmd = StripPrivate(cmd)
		if cmd == "" || ig.Command(cmd) || ReadOnlyCommand(cmd) {
			return nil, scr
		}
		// Screened as written, before its lines are joined: some shapes
		// (a YAML block) are secrets only across lines.
		if screenOut(&scr, "command", &cmd) {
			return nil, scr
		}
		ev.Kind, ev.Command = KindCommand, cutText(cleanLine(cmd), maxEventCommandChars)
		out, code := toolOutput(in.ToolResponse, in.Error)
		out = StripPrivate(ansiEscape().ReplaceAllString(out, ""))
		if _, err := screen.Check("tool_output", out); err != nil {
			// The whole output is dropped: no line of it is kept.
			scr.add(err)
			out = ""
		}
		ev.ExitCode = code
		// Codex's PostToolUse (0.169) carries the output alone: with no
		// exit code, the output says whether the run failed.
		ev.OK = !failed && (code == 0 || code == -1 && !OutputFailed(out))
		if failed && code == 0 {
			ev.ExitCode = -1
		}
		if !ev.OK {
			ev.Tests, ev.Errors = FailedTests(out), ErrorLines(out)
		}
	default:
		return nil, scr
	}
	if ev.Path != "" && screenOut(&scr, "path", &ev.Path) {
		return nil, scr
	}
	if ev.Command != "" && screenOut(&scr, "command", &ev.Command) {
		return nil, scr
	}
	ev.Tests = screenList(&scr, "tests", ev.Tests)
	ev.Errors = screenList(&scr, "errors", ev.Errors)
	ev.ID = eventID(h, in.SessionID, in.HookEventName, in.ToolUseID, ev)
	return ev, scr
}

// CompactEvent is a PreCompact's event: where the conversation stood (the
// transcript's last turns, screened), before the harness cuts it.
func CompactEvent(h Harness, in ToolInput, sc Scope, now time.Time) (*Event, Screened) {
	var scr Screened
	ev := &Event{SessionID: in.SessionID, Harness: string(h), Kind: KindCompact, At: now.UTC().Truncate(time.Millisecond)}
	setScope(ev, sc)
	turns := in.Messages
	if len(turns) == 0 && in.TranscriptPath != "" {
		turns, _, _ = ReadTranscriptTail(in.TranscriptPath) // unreadable: no summary
	}
	if summary, _ := SummaryAndNotes(turns); summary != "" {
		ev.Summary = cutText(cleanLine(StripPrivate(summary)), maxEventSummaryChars)
		if ev.Summary != "" {
			screenOut(&scr, "summary", &ev.Summary)
		}
	}
	ev.ID = eventID(h, in.SessionID, "PreCompact", in.Trigger+"\x00"+ev.At.Format(time.RFC3339Nano), ev)
	return ev, scr
}

func setScope(ev *Event, sc Scope) {
	// As with a close, the scope is settled here so a replay is the same
	// call; a remote goes with no namespace.
	if sc.Remote != "" {
		ev.Remote = sc.Remote
	} else {
		ev.Namespace = sc.Namespace
	}
}

func (s *Screened) add(err error) {
	var ref *screen.Refusal
	if errors.As(err, &ref) {
		s.Fields++
		s.Patterns = append(s.Patterns, ref.Pattern)
	}
}

// screenOut screens *v; when refused it empties it, counts it and reports true.
func screenOut(s *Screened, field string, v *string) bool {
	if _, err := screen.Check(field, *v); err != nil {
		s.add(err)
		*v = ""
		return true
	}
	return false
}

func screenList(s *Screened, field string, vs []string) []string {
	var out []string
	for _, v := range vs {
		if !screenOut(s, field, &v) {
			out = append(out, v)
		}
	}
	return out
}

// eventID derives an event's id from what identifies it: the same tool call
// seen twice (a hook run again) gets the same id, so the server keeps it once.
func eventID(h Harness, sessionID, hookEvent, useID string, ev *Event) string {
	sum := sha256.New()
	fmt.Fprintf(sum, "hearth-capture\x00%s\x00%s\x00%s\x00%s", h, sessionID, hookEvent, useID)
	if useID == "" {
		// No tool_use_id: the event's own content and time tell it apart.
		b, _ := json.Marshal(ev)
		sum.Write(b)
	}
	return h.idPrefix() + base64.RawURLEncoding.EncodeToString(sum.Sum(nil)[:24])
}

// relPath makes p (absolute, or relative to cwd) relative to the
// repository's top, with forward slashes; ok is false for a path outside
// the repository or when there is no repository.
func relPath(root, cwd, p string) (string, bool) {
	if root == "" || p == "" {
		return "", false
	}
	if !filepath.IsAbs(p) {
		if cwd == "" {
			cwd = root
		}
		p = filepath.Join(cwd, p)
	}
	rel, err := filepath.Rel(root, filepath.Clean(p))
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	rel = filepath.ToSlash(rel)
	if !utf8.ValidString(rel) || len(rel) > 300 || rel != cleanLine(rel) {
		return "", false
	}
	return rel, true
}

// createdFile reads Write's tool_response: {"type":"create"} for a new file.
func createdFile(resp json.RawMessage) bool {
	var r struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(resp, &r)
	return r.Type == "create"
}

// patchFile returns the first file an apply_patch text adds or updates.
func patchFile(patch string) (string, bool) {
	for line := range strings.Lines(patch) {
		line = strings.TrimSpace(line)
		if p, ok := strings.CutPrefix(line, "*** Add File: "); ok {
			return strings.TrimSpace(p), true
		}
		if p, ok := strings.CutPrefix(line, "*** Update File: "); ok {
			return strings.TrimSpace(p), false
		}
	}
	return "", false
}

// commandText is a shell tool's command: a string, or Codex's argv list
// (["bash","-lc","…"] gives its script).
func commandText(args map[string]json.RawMessage) string {
	for _, name := range []string{"command", "cmd"} {
		raw, ok := args[name]
		if !ok {
			continue
		}
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return strings.TrimSpace(s)
		}
		var argv []string
		if json.Unmarshal(raw, &argv) == nil && len(argv) > 0 {
			if len(argv) >= 3 && (argv[1] == "-lc" || argv[1] == "-c") {
				return strings.TrimSpace(argv[2])
			}
			return strings.TrimSpace(strings.Join(argv, " "))
		}
	}
	return ""
}

// exitLine finds "Exit code N" or "Exit code: N" (how Claude Code's Bash
// error and Codex's shell output name a command's status), Gemini CLI's
// "Exit Code: N" or Copilot's "<shellId: 0 completed with exit code N>".
var exitLine = lazyRegexp(`(?m)^\s*(?:Process exited with code|Exit [cC]ode:?)\s*(-?\d+)|<shellId: [^>\n]* completed with exit code (-?\d+)>`)

// toolOutput returns a shell tool's output text and exit code (-1 when the
// input does not say): from tool_response (an object with stdout, stderr,
// output and an exit code, or a string) and from PostToolUseFailure's error.
func toolOutput(resp json.RawMessage, errText string) (string, int) {
	var b strings.Builder
	code := -1
	var s string
	var obj map[string]json.RawMessage
	switch {
	case json.Unmarshal(resp, &s) == nil:
		b.WriteString(s)
	case json.Unmarshal(resp, &obj) == nil:
		for _, k := range []string{"stdout", "stderr", "output", "aggregated_output", "formatted_output", "text_result_for_llm", "llmContent"} {
			var v string
			if json.Unmarshal(obj[k], &v) == nil && v != "" {
				if k == "llmContent" {
					v = geminiShellOutput(v)
				}
				b.WriteString(v)
				b.WriteByte('\n')
			}
		}
		for _, k := range []string{"exit_code", "exitCode", "returncode"} {
			var n int
			if json.Unmarshal(obj[k], &n) == nil {
				code = n
				break
			}
		}
		if n, ok := openCodeExit(obj); ok && code == -1 {
			code = n
		}
	}
	if errText != "" {
		b.WriteString(errText)
	}
	out := b.String()
	if code == -1 {
		if m := exitLine().FindStringSubmatch(out); m != nil {
			code, _ = strconv.Atoi(m[1] + m[2]) // one of the two is empty
		} else if geminiSucceeded(obj) {
			code = 0
		}
	}
	return out, code
}

// Test-failure lines of the common runners: go test, pytest, cargo test,
// jest/vitest, mocha.
var testPatterns = []func() *regexp.Regexp{
	lazyRegexp(`(?m)^\s*--- FAIL: (\S+)`),
	lazyRegexp(`(?m)^FAILED (\S+?)(?: - |$)`),
	lazyRegexp(`(?m)^test (\S+) \.\.\. FAILED`),
	lazyRegexp(`(?m)^\s*[✕✗×] (.+?)(?: \(\d+ ?m?s\))?$`),
}

// FailedTests returns the distinct failing test names a command's output
// names, in order, at most maxEventTests, each cut to maxEventLineChars.
func FailedTests(out string) []string {
	type hit struct {
		at   int
		name string
	}
	var hits []hit
	for _, lazy := range testPatterns {
		re := lazy()
		for _, m := range re.FindAllStringSubmatchIndex(out, -1) {
			hits = append(hits, hit{m[0], out[m[2]:m[3]]})
		}
	}
	// Sorted by place in the output.
	for i := 1; i < len(hits); i++ {
		for j := i; j > 0 && hits[j].at < hits[j-1].at; j-- {
			hits[j], hits[j-1] = hits[j-1], hits[j]
		}
	}
	var names []string
	for _, h := range hits {
		n := cutText(cleanLine(h.name), maxEventLineChars)
		if n == "" || containsString(names, n) {
			continue
		}
		if names = append(names, n); len(names) == maxEventTests {
			break
		}
	}
	return names
}

// failLine is a line by which a run's output says it failed: a test
// runner's FAIL, a panic, a compiler's or tool's "error:", make's
// "*** … Error N".
var failLine = lazyRegexp(`(?m)^\s*(?:FAIL\b|--- FAIL|panic:|fatal:|error(?:\[\w+\])?:|Error:|ERROR\b|make(?:\[\d+\])?: \*\*\* .*Error \d+)`)

// OutputFailed reports whether a command's output says it failed (for a
// run whose exit code the harness did not give): it names a failing test,
// or a line starts as failLine says (docs/capture.md).
func OutputFailed(out string) bool {
	return len(FailedTests(out)) > 0 || failLine().MatchString(out)
}

// errorWord finds the lines ErrorLines prefers.
var errorWord = lazyRegexp(`(?i)\b(error|fail(ed|ure)?|panic|fatal|exception|cannot|undefined|not found)\b`)

// ErrorLines returns a failed command's first error lines: the first
// maxEventLines lines naming an error, else its first non-blank lines;
// "Exit code" lines and blank lines are skipped, each line cut to
// maxEventLineChars.
func ErrorLines(out string) []string {
	var first, errs []string
	for line := range strings.Lines(out) {
		line = cleanLine(line)
		if line == "" || exitLine().MatchString(line) {
			continue
		}
		line = cutText(line, maxEventLineChars)
		if len(first) < maxEventLines {
			first = append(first, line)
		}
		if errorWord().MatchString(line) {
			if errs = append(errs, line); len(errs) == maxEventLines {
				break
			}
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return first
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// readOnly are commands that only look: run without failing or failing,
// they say nothing worth keeping (docs/capture.md).
var readOnly = map[string]bool{
	"ls": true, "cat": true, "head": true, "tail": true, "grep": true, "rg": true, "find": true,
	"pwd": true, "echo": true, "wc": true, "which": true, "file": true, "stat": true, "tree": true,
	"less": true, "more": true, "diff": true, "du": true, "df": true, "true": true, "cd": true,
	"sed": true, "awk": true, "sort": true, "uniq": true, "jq": true, "env": true, "printenv": true,
}

// readOnlyGit are git subcommands that only look.
var readOnlyGit = map[string]bool{
	"status": true, "log": true, "diff": true, "show": true, "branch": true, "blame": true, "remote": true, "rev-parse": true,
}

// ReadOnlyCommand reports whether every part of a command line (split at
// &&, ||, ; and |) is a read-only command: such a command is not captured.
// `sed` counts as read-only only without -i.
func ReadOnlyCommand(cmd string) bool {
	parts := commandParts().Split(cmd, -1)
	for _, p := range parts {
		f := strings.Fields(p)
		if len(f) == 0 {
			continue
		}
		name := filepath.Base(f[0])
		switch {
		case name == "git" && len(f) > 1 && readOnlyGit[f[1]]:
		case name == "sed" && slicesContainsPrefix(f[1:], "-i"):
			return false
		case readOnly[name]:
		default:
			return false
		}
	}
	return true
}

func slicesContainsPrefix(list []string, prefix string) bool {
	for _, v := range list {
		if strings.HasPrefix(v, prefix) {
			return true
		}
	}
	return false
}

// ansiEscape is a terminal escape sequence (colours in test output).
var ansiEscape = lazyRegexp(`\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\-_]`)

// cleanLine makes one line of text the server keeps: terminal escapes
// removed, invalid UTF-8 and the characters a stored text may not hold
// (storage/textcheck) taken out, whitespace runs joined into one space.
func cleanLine(s string) string {
	s = strings.ToValidUTF8(ansiEscape().ReplaceAllString(s, ""), "")
	s = strings.Map(func(r rune) rune {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
			return ' '
		case textcheck.Unsafe(r, false):
			return -1
		}
		return r
	}, s)
	return oneLine(s)
}

// privateSpan is a <private>…</private> span (case-insensitive, across
// lines); an opening tag never closed hides everything after it.
var privateSpan = lazyRegexp(`(?is)<private>.*?(?:</private>|\z)`)

// StripPrivate removes every <private>…</private> span.
func StripPrivate(s string) string {
	if !strings.Contains(strings.ToLower(s), "<private>") {
		return s
	}
	return strings.TrimSpace(privateSpan().ReplaceAllString(s, ""))
}

// captureSpool is where captured events wait: a spool of its own, so a flood
// of tool calls never keeps a session close out.
func (r *run) captureSpool() *Spool {
	return &Spool{Dir: filepath.Join(r.cfg.CacheDir, "capture"), Now: r.cfg.Now}
}

// tool is `hearth hook tool`: capture one tool call.
func (r *run) tool(ctx context.Context, stdin io.Reader) {
	in, err := readToolInput(stdin)
	if err != nil {
		r.log.printf("%v", err)
		return
	}
	failed := in.HookEventName == "PostToolUseFailure"
	repo := r.repo(in.Input)
	ig := LoadIgnore(repo.Root)
	ev, scr := BuildEvent(r.cfg.Harness, in, failed, repo, ig, repo.Scope(), r.cfg.Now())
	r.logScreened(scr)
	r.spoolAndSend(ctx, ev)
}

// compact is `hearth hook compact`: capture where the session stood
// before the harness compacts its context.
func (r *run) compact(ctx context.Context, stdin io.Reader) {
	in, err := readToolInput(stdin)
	if err != nil {
		r.log.printf("%v", err)
		return
	}
	ev, scr := CompactEvent(r.cfg.Harness, in, r.repo(in.Input).Scope(), r.cfg.Now())
	r.logScreened(scr)
	r.spoolAndSend(ctx, ev)
}

func readToolInput(stdin io.Reader) (ToolInput, error) {
	data, err := io.ReadAll(io.LimitReader(stdin, maxInputBytes+1))
	if err != nil {
		return ToolInput{}, fmt.Errorf("read stdin: %w", err)
	}
	if len(data) > maxInputBytes {
		return ToolInput{}, fmt.Errorf("stdin is larger than %d bytes", maxInputBytes)
	}
	return ParseToolInput(data)
}

func (r *run) logScreened(s Screened) {
	if s.Fields > 0 {
		r.log.printf("capture: %d field(s) left out, they screen as secrets (%s)", s.Fields, strings.Join(s.Patterns, ", "))
	}
}

// spoolAndSend spools ev (when there is one) and then sends what waits,
// within captureDeadline from process start (the kernel's, where main
// could read it: the process's own start-up counts).
func (r *run) spoolAndSend(ctx context.Context, ev *Event) {
	sp := r.captureSpool()
	if ev != nil {
		if err := sp.Put(ev.ID, captureTool, ev); err != nil {
			r.log.printf("spool capture: %v", err)
		}
	}
	if r.cfg.Failpoint == "hook-tool-after-spool" {
		select {} // the kill test ends the process here
	}
	deadline := r.cfg.Start.Add(captureDeadline)
	if !r.cfg.Now().Before(deadline) {
		// Starting the process took the whole budget (a loaded machine):
		// the event waits for the next hook's send.
		r.log.printf("capture: no time left to send, %v after the process started (kept in the spool)", r.cfg.Now().Sub(r.cfg.Start).Round(time.Millisecond))
		return
	}
	cctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	if err := sp.SendBatch(cctx, r.client); err != nil {
		r.log.printf("capture: %v (kept in the spool)", err)
	}
}

// captureTool is the route that takes captured events.
const captureTool = "memory_capture"
