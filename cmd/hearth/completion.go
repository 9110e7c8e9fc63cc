package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/hearth-memory/hearth/cmd/hearth/internal/connect"
)

var completionSpec = spec{name: "completion", args: "bash",
	about: `Prints a bash completion script for hearth: commands, their flags, and
file names where a command takes a file. Load it in the current shell with
  source <(hearth completion bash)
or keep it where bash-completion finds it:
  hearth completion bash > ~/.local/share/bash-completion/completions/hearth`}

// completionWords are the words that may follow a command before its
// flags: sub-commands, events and harnesses.
var completionWords = map[string][]string{
	"token":   {"rotate", "show"},
	"hook":    {"session-start", "prompt", "session-end", "mcp-headers"},
	"connect": connect.Harnesses,
	"help":    nil, // filled with the commands
}

// fileFlags take a file or directory name.
var fileFlags = []string{"--data", "--out", "--token-file", "--ca-file", "--tls-cert", "--tls-key"}

var flagName = regexp.MustCompile(`(?m)^  (--[a-z][a-z-]*)`)

// completionFlags returns each command's flags, read from its own --help
// (so completion offers what the help lists): "token rotate" and "token
// show" apart.
func completionFlags() map[string][]string {
	out := map[string][]string{}
	var names [][]string
	for _, c := range commands {
		if c.spec.name == "token" {
			names = append(names, []string{"token", "rotate"}, []string{"token", "show"})
			continue
		}
		names = append(names, []string{c.spec.name})
	}
	for _, n := range names {
		var help bytes.Buffer
		run(context.Background(), append(slices.Clone(n), "--help"), &help, io.Discard)
		var flags []string
		for _, m := range flagName.FindAllStringSubmatch(help.String(), -1) {
			flags = append(flags, m[1])
		}
		out[strings.Join(n, " ")] = append(flags, "--help")
	}
	return out
}

func completionCmd(args []string, stdout, stderr io.Writer) int {
	fs := completionSpec.newFlags(stderr)
	if code, ok := completionSpec.parse(fs, args, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() != 1 || fs.Arg(0) != "bash" {
		return completionSpec.fail(stderr, "want one shell: bash")
	}
	fmt.Fprint(stdout, bashCompletion())
	return 0
}

// bashCompletion is the bash script: it completes the command, then the
// words after it (completionWords), then flags, and file names after a
// flag that takes a file and for positional arguments.
func bashCompletion() string {
	var cmds []string
	for _, c := range commands {
		cmds = append(cmds, c.spec.name)
	}
	var b strings.Builder
	b.WriteString(`# bash completion for hearth (hearth completion bash)
_hearth() {
  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
  local cmd=${COMP_WORDS[1]} sub=${COMP_WORDS[2]:-}
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=($(compgen -W "` + strings.Join(cmds, " ") + ` --help --version" -- "$cur")); return
  fi
  case "$prev" in
    ` + strings.Join(fileFlags, "|") + `) COMPREPLY=($(compgen -f -- "$cur")); return;;
  esac
  if [ "$COMP_CWORD" -eq 2 ]; then
    case "$cmd" in
`)
	words := map[string][]string{}
	for k, v := range completionWords {
		words[k] = v
	}
	words["help"] = cmds
	for _, k := range slices.Sorted(maps.Keys(words)) {
		fmt.Fprintf(&b, "      %s) COMPREPLY=($(compgen -W %q -- \"$cur\")); return;;\n", k, strings.Join(words[k], " "))
	}
	b.WriteString(`    esac
  fi
  local flags=
  case "$cmd" in
`)
	flags := completionFlags()
	subs := map[string][]string{} // command -> its sub-commands' "sub) flags=…;;"
	for _, k := range slices.Sorted(maps.Keys(flags)) {
		if cmd, sub, ok := strings.Cut(k, " "); ok {
			subs[cmd] = append(subs[cmd], fmt.Sprintf("%s) flags=%q;;", sub, strings.Join(flags[k], " ")))
			continue
		}
		fmt.Fprintf(&b, "    %s) flags=%q;;\n", k, strings.Join(flags[k], " "))
	}
	for _, cmd := range slices.Sorted(maps.Keys(subs)) {
		fmt.Fprintf(&b, "    %s) case \"$sub\" in %s esac;;\n", cmd, strings.Join(subs[cmd], " "))
	}
	b.WriteString(`  esac
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$flags" -- "$cur"))
  else
    COMPREPLY=($(compgen -f -- "$cur"))
  fi
}
complete -o filenames -F _hearth hearth
`)
	return b.String()
}
