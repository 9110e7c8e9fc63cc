package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hearth-memory/hearth/cmd/hearth/internal/hook"
)

var hookSpec = spec{name: "hook", args: "EVENT --harness claude-code|codex|copilot|opencode|gemini-cli [--url URL] [--token-file FILE] [--ca-file FILE]", about: hookAbout}

// hookAbout is `hearth hook`'s help after its usage line.
const hookAbout = `also:  hearth hook mcp-headers [--token-file FILE]

EVENT is session-start, prompt, tool, compact or session-end. Runs one
Claude Code, Codex, GitHub Copilot CLI, OpenCode or Gemini CLI hook
(OpenCode's through Hearth's plugin): reads the harness's JSON on stdin
and prints the context to inject. tool (PostToolUse, PostToolUseFailure;
Gemini CLI's AfterTool) and compact (PreCompact; Gemini CLI's
PreCompress) capture an edit, a command's outcome or a compaction:
screened, spooled, and sent within 80 ms (see docs/capture.md; paths and
commands named in the checkout's .hearthignore are never captured). Every
failure exits 0 and prints nothing;
errors go to hook.log in the cache directory (HEARTH_CACHE_DIR, default
the user cache directory's hearth folder).

The server is --url, else HEARTH_URL, else ` + defaultURL + `; the token
is read from --token-file, else HEARTH_TOKEN, else the file HEARTH_TOKEN_FILE
names. Prompt recall: HEARTH_RECALL_MIN_COSINE (default 0.35) and
HEARTH_RECALL_LIMIT (default 3). HEARTH_HOOKS=off turns every hook off.

mcp-headers prints {"Authorization":"Bearer <token>"} for Claude Code's
MCP headersHelper, so the token can stay in its file.`

// runHook is `hearth hook`. It returns 0 whatever happens to the hook
// itself: only a usage error of mcp-headers exits otherwise.
func runHook(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, start time.Time) int {
	fs := hookSpec.newFlags(io.Discard)
	harness := fs.String("harness", "", "claude-code, codex, copilot, opencode or gemini-cli")
	url := fs.String("url", "", "Hearth's base URL (default $HEARTH_URL, else "+defaultURL+")")
	tokenFile := fs.String("token-file", "", "file holding the bearer token")
	caFile := fs.String("ca-file", "", "a PEM file of CA certificates to trust for an https URL (default $HEARTH_CA_FILE)")
	if len(args) == 0 || wantsHelp(args[0]) || slices.ContainsFunc(args[1:], wantsHelp) {
		hookSpec.usage(stdout, fs)
		return 0
	}
	event := args[0]
	if err := fs.Parse(args[1:]); err != nil || fs.NArg() > 0 {
		// A hook must not fail the agent over its own command line: say it
		// on stderr (shown to the user, never to the model) and exit 0.
		fmt.Fprintf(stderr, "hearth hook: bad arguments (see hearth hook --help)\n")
		return 0
	}
	env := os.Getenv
	cfg := hook.Config{URL: *url, Env: env, Start: start, Failpoint: failpoint()}
	if cfg.URL == "" {
		cfg.URL = env("HEARTH_URL")
	}
	if cfg.URL == "" {
		cfg.URL = defaultURL
	}
	if u, err := baseURL(cfg.URL); err == nil {
		cfg.URL = u
	}
	token, file, tokenErr := readToken(*tokenFile, env)
	cfg.Token, cfg.TokenFile = token, file
	if event == "mcp-headers" {
		if tokenErr != nil || token == "" {
			fmt.Fprintln(stderr, "hearth hook mcp-headers: no token (give --token-file, HEARTH_TOKEN or HEARTH_TOKEN_FILE)")
			return 1
		}
		b, _ := json.Marshal(map[string]string{"Authorization": "Bearer " + token})
		fmt.Fprintf(stdout, "%s\n", b)
		return 0
	}
	if strings.EqualFold(env("HEARTH_HOOKS"), "off") {
		return 0
	}
	if cfg.CAFile = *caFile; cfg.CAFile == "" {
		cfg.CAFile = env("HEARTH_CA_FILE")
	}
	if cfg.CAFile != "" {
		// A CA file that cannot be read leaves the system's CAs: the call
		// then fails on the certificate, and the log says why.
		if pool, err := caPool(cfg.CAFile); err == nil {
			cfg.RootCAs = pool
		} else {
			tokenErr = errors.Join(tokenErr, err)
		}
	}
	cfg.CacheDir = cacheDir(env)
	h, err := hook.ParseHarness(*harness)
	if err != nil {
		fmt.Fprintf(stderr, "hearth hook: %v\n", err)
		return 0
	}
	cfg.Harness = h
	if exe, err := os.Executable(); err == nil {
		cfg.Exe = exe
	}
	cfg.MinCosine = hook.DefaultMinCosine
	if v, err := strconv.ParseFloat(env("HEARTH_RECALL_MIN_COSINE"), 64); err == nil && v >= -1 && v <= 1 {
		cfg.MinCosine = v
	}
	if v, err := strconv.Atoi(env("HEARTH_RECALL_LIMIT")); err == nil && v > 0 && v <= 10 {
		cfg.RecallLimit = v
	}
	// Without a token, calls go out without one (an address client may
	// still read); the log says why.
	cfg.TokenErr = tokenErr
	hook.Run(ctx, cfg, event, stdin, stdout)
	return 0
}

// readToken returns the bearer token: from file when given, else
// HEARTH_TOKEN, else the file HEARTH_TOKEN_FILE names. file is the file it
// came from ("" for the environment variable). The error never holds the
// token.
func readToken(file string, env func(string) string) (token, from string, err error) {
	if file == "" {
		if t := strings.TrimSpace(env("HEARTH_TOKEN")); t != "" {
			return t, "", nil
		}
		file = env("HEARTH_TOKEN_FILE")
	}
	if file == "" {
		return "", "", nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", "", fmt.Errorf("token file: %w", err)
	}
	t := strings.TrimSpace(string(b))
	if strings.ContainsAny(t, "\r\n\t ") || t == "" {
		return "", "", fmt.Errorf("token file %s does not hold one token", file)
	}
	return t, file, nil
}

// cacheDir is where the hooks keep state, the spool and their log:
// HEARTH_CACHE_DIR, else <user cache dir>/hearth.
func cacheDir(env func(string) string) string {
	if d := env("HEARTH_CACHE_DIR"); d != "" {
		return d
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "hearth")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("hearth-%d", os.Getuid()))
}

// baseURL checks a Hearth URL and returns it without a trailing slash or
// /mcp: an http(s) URL with a host and no user information (which would
// end up in settings files and process lists).
func baseURL(s string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", errors.New("URL: want http(s)://host[:port]")
	}
	if u.User != nil {
		return "", errors.New("URL: user information does not belong in the URL; use a token file")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", errors.New("URL: want no query or fragment")
	}
	u.Path = strings.TrimSuffix(strings.TrimRight(u.Path, "/"), "/mcp")
	return strings.TrimRight(u.String(), "/"), nil
}
