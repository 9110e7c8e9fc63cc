package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/hearth-memory/hearth/cmd/hearth/internal/connect"
)

var connectSpec = spec{name: "connect", args: "claude-code|codex|copilot|opencode|gemini-cli [--url URL] [--token-file FILE] [--ca-file FILE] [--apply]",
	about: `Prints the MCP registration and the hooks that connect Claude Code,
Codex, GitHub Copilot CLI, OpenCode or Gemini CLI to Hearth (OpenCode's
hooks are a plugin module); with --apply, merges them into your settings
instead (every other entry is kept, and each changed file is backed up
first, never overwriting an earlier backup). The token never appears in
either: the hooks read --token-file or HEARTH_TOKEN, the MCP registration
reads HEARTH_TOKEN (or, with --token-file, the file: Claude Code through
"hearth hook mcp-headers", OpenCode through its {file:…} substitution).
With --ca-file the hooks trust that CA for an https URL; the harness's
own MCP client needs it too (for Claude Code, OpenCode and Gemini CLI,
NODE_EXTRA_CA_CERTS).`}

// connectFlags defines connect's flags on fs.
func connectFlags(fs *flag.FlagSet) (url, tokenFile, caFile *string, apply *bool) {
	url = fs.String("url", "", "Hearth's base URL, http:// or https:// (default $HEARTH_URL, else "+defaultURL+")")
	tokenFile = fs.String("token-file", "", "file holding the token, read by the hooks (and Claude Code's MCP headers helper)")
	caFile = fs.String("ca-file", "", "a PEM file of CA certificates the hooks trust for an https URL (default $HEARTH_CA_FILE)")
	apply = fs.Bool("apply", false, "merge into your settings instead of printing")
	return
}

// runConnect is `hearth connect`.
func runConnect(args []string, stdout, stderr io.Writer) int {
	fs := connectSpec.newFlags(stderr)
	url, tokenFile, caFile, apply := connectFlags(fs)
	if len(args) == 0 || wantsHelp(args[0]) {
		connectSpec.usage(stdout, fs)
		return 0
	}
	harness := args[0]
	if code, ok := connectSpec.parse(fs, args[1:], stdout, stderr); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return connectSpec.fail(stderr, "unexpected argument %q", fs.Arg(0))
	}
	o, err := connectOptions(harness, *url, *tokenFile, *caFile, os.Getenv)
	if err != nil {
		return connectSpec.fail(stderr, "%v", err)
	}
	if !*apply {
		fmt.Fprint(stdout, connect.Text(o))
		return 0
	}
	paths, err := connect.SettingsPaths(harness, os.Getenv)
	if err != nil {
		fmt.Fprintln(stderr, "hearth connect:", err)
		return 1
	}
	changes, err := connect.Apply(o, paths, time.Now())
	for _, c := range changes {
		if c.Backup != "" {
			fmt.Fprintf(stdout, "updated %s (backup: %s)\n", c.Path, c.Backup)
		} else {
			fmt.Fprintf(stdout, "wrote %s\n", c.Path)
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "hearth connect:", err)
		return 1
	}
	if len(changes) == 0 {
		fmt.Fprintln(stdout, "already connected: nothing to change")
	}
	if harness == connect.Codex {
		fmt.Fprintln(stdout, "Codex runs new hooks only once you trust them: open codex and run /hooks.")
	}
	if harness == connect.OpenCode {
		fmt.Fprintln(stdout, "OpenCode loads the plugin at start: restart opencode.")
	}
	if o.TokenFile == "" || harness == connect.Codex || harness == connect.Copilot || harness == connect.GeminiCLI {
		fmt.Fprintf(stdout, "The MCP server reads the token from $%s: set it where you start %s.\n", connect.TokenEnv, harness)
	}
	return 0
}

// connectOptions settles what `hearth connect` writes: the URL (flag,
// HEARTH_URL, default), an absolute token file, and this binary's absolute
// path for the hook commands.
func connectOptions(harness, url, tokenFile, caFile string, env func(string) string) (connect.Options, error) {
	if err := connect.CheckHarness(harness); err != nil {
		return connect.Options{}, err
	}
	o := connect.Options{Harness: harness, URL: url}
	if o.URL == "" {
		o.URL = env("HEARTH_URL")
	}
	if o.URL == "" {
		o.URL = defaultURL
	}
	var err error
	if o.URL, err = baseURL(o.URL); err != nil {
		return o, err
	}
	o.PassURL = o.URL != defaultURL
	if caFile == "" {
		caFile = env("HEARTH_CA_FILE")
	}
	if caFile != "" {
		abs, err := filepath.Abs(caFile)
		if err != nil {
			return o, err
		}
		if _, err := caPool(abs); err != nil {
			return o, err
		}
		o.CAFile = abs
	}
	if tokenFile != "" {
		abs, err := filepath.Abs(tokenFile)
		if err != nil {
			return o, err
		}
		if _, err := os.Stat(abs); err != nil {
			return o, fmt.Errorf("token file: %w", err)
		}
		o.TokenFile = abs
	}
	exe, err := os.Executable()
	if err != nil {
		return o, err
	}
	if resolved, err := filepath.EvalSymlinks(exe); err == nil {
		exe = resolved
	}
	o.Exe = exe
	return o, nil
}
