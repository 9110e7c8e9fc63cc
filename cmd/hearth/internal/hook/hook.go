// Package hook is `hearth hook`: the command hooks Claude Code and Codex run
// at session start, with each prompt and at session end. Every hook fails
// open: whatever goes wrong, it exits 0, prints nothing harmful, and writes
// the error to a log under the user's cache directory; a token never
// appears in its output, log or arguments.
package hook

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/hearth-memory/hearth/storage/screen"
)

// Deadlines of the hooks.
const (
	// PromptDeadline is prompt recall's budget from process start to
	// output: the prompt waits on it.
	PromptDeadline = 300 * time.Millisecond
	// promptReserve is kept back from PromptDeadline for writing output.
	promptReserve = 50 * time.Millisecond
	// SessionStartDeadline bounds session-start's bootstrap call.
	SessionStartDeadline = time.Second
	// anchorDeadline bounds the path-anchor check after session-start's output.
	anchorDeadline = 500 * time.Millisecond
	// inlineCloseDeadline bounds session-end's own delivery when no drainer
	// can be started: the harnesses kill a session-end hook after 1-1.5 s.
	inlineCloseDeadline = 700 * time.Millisecond
	// drainDeadline bounds one detached drainer's run.
	drainDeadline = 2 * time.Minute
	// drainBackoff is how long after a failed delivery a hook run leaves the
	// spool alone before starting another drainer.
	drainBackoff = 30 * time.Second
)

// Recall defaults: a hit must be at least this similar to the prompt
// (under embedding ranking; full-text ranking has no cosine), and at most
// this many are shown.
const (
	DefaultMinCosine   = 0.35
	DefaultRecallLimit = 3
)

// maxQueryChars is memory_search's limit on a query; a longer prompt is
// cut at a word before it.
const maxQueryChars = 1000

// Config is one hook run's setting, read by main from flags and the
// environment.
type Config struct {
	Harness Harness
	// URL is Hearth's base URL (HEARTH_URL, default http://127.0.0.1:8765).
	URL string
	// Token is the bearer token (HEARTH_TOKEN or the HEARTH_TOKEN_FILE file).
	Token string
	// TokenFile is the file the token came from, "" when from HEARTH_TOKEN;
	// a drainer started by the hook reads it again.
	TokenFile string
	// TokenErr is why no token could be read, for the log.
	TokenErr error
	// CacheDir holds session state, the spool and the log.
	CacheDir string
	// Env looks up environment variables (GIT_DIR, HOME, …).
	Env func(string) string
	// Now is the clock; Start is when the process started (prompt recall's
	// deadline counts from it).
	Now   func() time.Time
	Start time.Time
	// PromptDeadline is prompt recall's budget from Start; 0 means the
	// package's PromptDeadline, which `hearth hook` always uses. Tests of
	// what recall finds lengthen it, so that a race-instrumented server's
	// speed on a busy machine does not decide them.
	PromptDeadline time.Duration
	// Exe is this binary, to start a detached drainer; "" delivers inline.
	Exe string
	// MinCosine and RecallLimit tune prompt recall.
	MinCosine   float64
	RecallLimit int
	// CAFile is a PEM file of CA certificates trusted beside the system's
	// for an https URL ("" trusts the system's alone); RootCAs is its pool.
	CAFile  string
	RootCAs *x509.CertPool
	// Failpoint, in failpoint builds only, stops session-end right after it
	// spooled its close ("hook-end-after-spool") so a test can kill it there.
	Failpoint string
}

// Run runs one hook event (session-start, prompt, session-end, tool,
// compact, or drain for a detached drainer) reading the harness's JSON from stdin and writing
// the harness's output to stdout. It always leaves a process exit code of 0
// to the caller: errors only reach the log.
func Run(ctx context.Context, cfg Config, event string, stdin io.Reader, stdout io.Writer) {
	cfg.fill()
	log := newLogger(cfg.CacheDir, cfg.Harness, event, cfg.Now)
	defer log.close()
	defer func() {
		if r := recover(); r != nil {
			log.printf("panic: %v", r)
		}
	}()
	if cfg.TokenErr != nil {
		log.printf("%v", cfg.TokenErr)
	}
	r := &run{cfg: cfg, log: log, client: NewClient(cfg.URL, cfg.Token)}
	if cfg.RootCAs != nil {
		r.client.HTTP.Transport.(*http.Transport).TLSClientConfig = &tls.Config{RootCAs: cfg.RootCAs, MinVersion: tls.VersionTLS12}
	}
	switch event {
	case "session-start", "prompt", "session-end":
		in, err := ReadInput(stdin)
		if err != nil {
			log.printf("%v", err)
			return
		}
		if cfg.Harness == GeminiCLI {
			in.Prompt = StripHookContext(in.Prompt)
		}
		switch event {
		case "session-start":
			r.sessionStart(ctx, in, stdout)
		case "prompt":
			r.prompt(ctx, in, stdout)
		case "session-end":
			r.sessionEnd(ctx, in)
		}
	case "tool":
		r.tool(ctx, stdin)
	case "compact":
		r.compact(ctx, stdin)
	case "drain":
		r.drain(ctx)
	default:
		log.printf("unknown hook event %q: want session-start, prompt, session-end, tool or compact", event)
	}
}

func (c *Config) fill() {
	if c.Env == nil {
		c.Env = os.Getenv
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Start.IsZero() {
		c.Start = c.Now()
	}
	if c.PromptDeadline <= 0 {
		c.PromptDeadline = PromptDeadline
	}
	if c.RecallLimit <= 0 {
		c.RecallLimit = DefaultRecallLimit
	}
}

type run struct {
	cfg    Config
	log    *logger
	client *Client
}

func (r *run) spool() *Spool {
	return &Spool{Dir: filepath.Join(r.cfg.CacheDir, "spool"), Now: r.cfg.Now}
}

// repo finds the checkout of a session's cwd; on error, no repository.
func (r *run) repo(in Input) Repo {
	cwd := in.Cwd
	if cwd == "" {
		cwd, _ = os.Getwd()
	}
	repo, err := DiscoverRepo(cwd, r.cfg.Env)
	if err != nil {
		r.log.printf("git: %v", err)
		return Repo{}
	}
	return repo
}

// sessionStart injects the repository's bootstrap (with where the last
// captured session left off), then checks the path anchors of what it
// showed.
func (r *run) sessionStart(ctx context.Context, in Input, stdout io.Writer) {
	r.startDrainerIfDue()
	if err := PruneStates(r.cfg.CacheDir, r.cfg.Now()); err != nil {
		r.log.printf("prune session states: %v", err)
	}
	repo := r.repo(in)
	sc := repo.Scope()
	// What the last session captured and could not send yet goes first, so
	// the bootstrap's "where we left off" is current (docs/capture.md).
	sctx, scancel := context.WithTimeout(ctx, startCaptureDeadline)
	if err := r.captureSpool().SendBatch(sctx, r.client); err != nil {
		r.log.printf("capture: %v (kept in the spool)", err)
	}
	scancel()

	cctx, cancel := context.WithTimeout(ctx, SessionStartDeadline)
	defer cancel()
	var boot Bootstrap
	err := r.client.CallScoped(cctx, "memory_bootstrap", sc, map[string]any{"session_id": in.SessionID}, &boot)
	if err != nil {
		r.log.printf("memory_bootstrap: %v", err)
	}
	var b *Bootstrap
	if err == nil {
		b = &boot
	}
	if out := Render(r.cfg.Harness, EventSessionStart, SessionStartText(b)); len(out) > 0 {
		if _, err := stdout.Write(out); err != nil {
			r.log.printf("write output: %v", err)
		}
	}
	// Written under the session's lock: a prompt hook may run beside this
	// one and record what it showed.
	err = UpdateState(r.cfg.CacheDir, r.cfg.Harness, in.SessionID, func(st *State) {
		if in.Source == "compact" || in.Source == "clear" {
			// What recall showed before may be gone from the context.
			st.Shown = nil
		}
	})
	if err != nil {
		r.log.printf("save session state: %v", err)
	}
	if b != nil && len(b.Items) > 0 {
		actx, acancel := context.WithTimeout(ctx, anchorDeadline)
		defer acancel()
		if err := r.checkAnchors(actx, repo, b); err != nil {
			r.log.printf("anchors: %v", err)
		}
	}
}

// prompt injects the records that match a prompt and were not shown yet in
// this session, within the prompt deadline from process start.
func (r *run) prompt(ctx context.Context, in Input, stdout io.Writer) {
	r.startDrainerIfDue()
	q := strings.TrimSpace(in.Prompt)
	if q == "" || strings.HasPrefix(q, "/") {
		return // nothing to search, or a harness command
	}
	if _, err := screen.Check("prompt", q); err != nil {
		// Never sent, never logged: only which pattern refused it.
		var ref *screen.Refusal
		if errors.As(err, &ref) {
			r.log.printf("prompt not searched: it screens as a secret (%s)", ref.Pattern)
		}
		return
	}
	q = cutText(q, maxQueryChars)
	st := LoadState(r.cfg.CacheDir, r.cfg.Harness, in.SessionID)
	sc := r.repo(in).Scope()
	deadline := r.cfg.Start.Add(r.cfg.PromptDeadline - promptReserve)
	cctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	args := map[string]any{
		"query": q, "recall": true, "limit": r.cfg.RecallLimit, "min_cosine": r.cfg.MinCosine,
		// The server's relevance bar: nothing is injected when nothing
		// bears on the prompt (docs/abstention.md).
		"abstain": true,
	}
	if len(st.Shown) > 0 {
		args["exclude"] = st.Shown
	}
	var res Search
	if err := r.client.CallScoped(cctx, "memory_search", sc, args, &res); err != nil {
		r.log.printf("memory_search: %v", err)
		return
	}
	hits := make([]SearchHit, 0, len(res.Hits))
	for _, h := range res.Hits {
		// The server applies min_cosine; a hit under the bar, or one shown
		// already, is kept out here as well.
		if h.Cosine != nil && *h.Cosine < r.cfg.MinCosine || h.ID == "" || shownPrefix(st.Shown, h.ID) {
			continue
		}
		if len(hits) < r.cfg.RecallLimit {
			hits = append(hits, h)
		}
	}
	if len(hits) == 0 {
		return
	}
	if _, err := stdout.Write(Render(r.cfg.Harness, EventPrompt, RecallText(hits))); err != nil {
		r.log.printf("write output: %v", err)
		return
	}
	err := UpdateState(r.cfg.CacheDir, r.cfg.Harness, in.SessionID, func(st *State) {
		for _, h := range hits {
			st.AddShown(h.ID)
		}
	})
	if err != nil {
		r.log.printf("save session state: %v", err)
	}
}

func shownPrefix(shown []string, id string) bool {
	for _, s := range shown {
		if strings.HasPrefix(id, s) {
			return true
		}
	}
	return false
}

// sessionEnd closes the session on the server exactly once: the close is
// spooled first (an atomic 0600 file), then a detached drainer delivers it,
// so a harness that kills the hook after a second loses nothing. Replays
// are safe: the op_id makes the server return its receipt.
func (r *run) sessionEnd(ctx context.Context, in Input) {
	sc := r.repo(in).Scope()
	if in.TranscriptPath == "" && len(in.Messages) == 0 && r.cfg.Harness == Copilot {
		in.TranscriptPath = CopilotTranscript(r.cfg.Env, in.SessionID)
	}
	args, ok := r.closeArgs(in, sc)
	if !ok {
		return
	}
	op := closeOpID(r.cfg.Harness, in.SessionID, args)
	if r.cfg.Harness == Copilot && in.TranscriptPath != "" {
		// Copilot writes events.jsonl behind its hooks, and its SessionEnd
		// can run before the turn it ends is on disk: a close read then
		// would lack that turn, or repeat the last close's op_id and be
		// taken as its replay. So the hook waits, for copilotTurnsWait at
		// most, for the transcript to hold turns this session's last
		// close did not (docs/copilot.md); then it closes as it can.
		st := LoadState(r.cfg.CacheDir, r.cfg.Harness, in.SessionID)
		for deadline := time.Now().Add(copilotTurnsWait); (args["summary"] == nil || op == st.LastClose) && time.Now().Before(deadline); {
			time.Sleep(50 * time.Millisecond) // polling a file Copilot writes
			args, _ = r.closeArgs(in, sc)
			op = closeOpID(r.cfg.Harness, in.SessionID, args)
		}
		if args["summary"] == nil {
			r.log.printf("copilot: no turns in %s after %v; closing without a summary", in.TranscriptPath, copilotTurnsWait)
		}
		err := UpdateState(r.cfg.CacheDir, r.cfg.Harness, in.SessionID, func(st *State) { st.LastClose = op })
		if err != nil {
			r.log.printf("save session state: %v", err)
		}
	}
	args["op_id"] = op
	sp := r.spool()
	if err := sp.Put(op, "memory_session_close", args); err != nil {
		r.log.printf("spool close: %v; sending it now", err)
		cctx, cancel := context.WithTimeout(ctx, inlineCloseDeadline)
		defer cancel()
		if err := r.client.Call(cctx, "memory_session_close", args, nil); err != nil {
			r.log.printf("memory_session_close: %v", err)
		}
		return
	}
	if r.cfg.Failpoint == "hook-end-after-spool" {
		select {} // the kill test ends the process here
	}
	if err := r.startDrainer(); err != nil {
		r.log.printf("start drainer: %v; delivering inline", err)
		cctx, cancel := context.WithTimeout(ctx, inlineCloseDeadline)
		defer cancel()
		if _, err := sp.Drain(cctx, r.client, r.log.printf); err != nil {
			r.log.printf("drain: %v", err)
		}
	}
}

// copilotTurnsWait bounds how long Copilot's session-end hook waits for
// events.jsonl to hold the turns it closes; it fits in the hook's timeout.
const copilotTurnsWait = time.Second

// closeArgs builds a session close's arguments (without its op_id): the
// summary and notes from the session's last turns, and its scope. ok is
// false for a session without a single prompt, which has nothing to close
// (`claude mcp list` runs the session-end hook too, naming a transcript it
// never writes); Copilot runs its SessionEnd after a turn, so its sessions
// always close.
func (r *run) closeArgs(in Input, sc Scope) (args map[string]any, ok bool) {
	args = map[string]any{"session_id": in.SessionID}
	if in.TranscriptPath != "" || len(in.Messages) > 0 {
		turns, whole, err := in.Messages, true, error(nil)
		if len(turns) == 0 {
			turns, whole, err = ReadTranscriptTail(in.TranscriptPath)
		}
		switch {
		case r.cfg.Harness != Copilot && (errors.Is(err, os.ErrNotExist) || err == nil && whole && len(turns) == 0):
			return nil, false
		case err != nil:
			r.log.printf("transcript: %v", err)
		}
		summary, notes := SummaryAndNotes(turns)
		if s := r.screened("summary", summary); s != "" {
			args["summary"] = s
		}
		if n := r.screened("notes", notes); n != "" {
			args["notes"] = n
		}
	}
	// The scope is settled here, not at delivery: a spooled close must
	// replay byte for byte. A remote the server cannot read would fail the
	// replay for good, so the namespace is sent when there is no remote.
	if sc.Remote != "" {
		args["remote"] = sc.Remote
	} else {
		args["namespace"] = sc.Namespace
	}
	return args, true
}

// screened returns text, or "" when it screens as a secret: a refused
// summary would refuse the whole close on the server.
func (r *run) screened(field, text string) string {
	if text == "" {
		return ""
	}
	if _, err := screen.Check(field, text); err != nil {
		var ref *screen.Refusal
		if errors.As(err, &ref) {
			r.log.printf("session close: %s left out, it screens as a secret (%s)", field, ref.Pattern)
		}
		return ""
	}
	return text
}

// closeOpID derives a close's op_id from the harness, the session id and
// the close's inputs: the same close always gets the same id (so a replay
// returns the receipt), and a resumed session that ends again with more
// transcript closes again under a new one.
func closeOpID(h Harness, sessionID string, args map[string]any) string {
	sum := sha256.New()
	fmt.Fprintf(sum, "hearth-hook-close\x00%s\x00%s", h, sessionID)
	for _, k := range []string{"namespace", "remote", "summary", "notes"} {
		v, _ := args[k].(string)
		fmt.Fprintf(sum, "\x00%d:%s", len(v), v)
	}
	return h.idPrefix() + base64.RawURLEncoding.EncodeToString(sum.Sum(nil)[:24])
}

// drain is the detached drainer: it delivers the spool and the captured
// events and exits.
func (r *run) drain(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, drainDeadline)
	defer cancel()
	if err := r.captureSpool().SendBatch(ctx, r.client); err != nil {
		r.log.printf("capture: %v (kept in the spool)", err)
	}
	if _, err := r.spool().Drain(ctx, r.client, r.log.printf); err != nil {
		r.log.printf("drain: %v", err)
	}
}

// startDrainerIfDue starts a drainer when a spooled call waits that no
// drainer has tried in the last drainBackoff.
func (r *run) startDrainerIfDue() {
	if !r.spool().Due(r.cfg.Now(), drainBackoff) {
		return
	}
	if err := r.startDrainer(); err != nil {
		r.log.printf("start drainer: %v", err)
	}
}

// startDrainer starts `hearth hook drain` in a session of its own, with no
// stdin or stdout, and does not wait for it. The URL and the token file go
// through its environment, the token through HEARTH_TOKEN as inherited:
// nothing secret is in its arguments.
func (r *run) startDrainer() error {
	if r.cfg.Exe == "" {
		return errors.New("no executable to start")
	}
	if err := os.MkdirAll(r.cfg.CacheDir, 0o700); err != nil {
		return err
	}
	cmd := exec.Command(r.cfg.Exe, "hook", "drain", "--harness", string(r.cfg.Harness))
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case name == "HEARTH_URL", name == "HEARTH_CACHE_DIR", name == "HEARTH_TOKEN_FILE", name == "HEARTH_CA_FILE":
		case name == "HEARTH_TOKEN" && r.cfg.TokenFile != "":
			// The token came from a file: the drainer reads the same file.
		default:
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "HEARTH_URL="+r.cfg.URL, "HEARTH_CACHE_DIR="+r.cfg.CacheDir)
	if r.cfg.TokenFile != "" {
		cmd.Env = append(cmd.Env, "HEARTH_TOKEN_FILE="+r.cfg.TokenFile)
	}
	if r.cfg.CAFile != "" {
		cmd.Env = append(cmd.Env, "HEARTH_CA_FILE="+r.cfg.CAFile)
	}
	cmd.Dir = r.cfg.CacheDir
	detach(cmd)
	if err := cmd.Start(); err != nil {
		return err
	}
	return cmd.Process.Release()
}
