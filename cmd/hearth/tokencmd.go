package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/term"
	"google.golang.org/grpc/status"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"github.com/hearth-memory/hearth/server"
	"github.com/hearth-memory/hearth/server/options"
	"github.com/hearth-memory/hearth/storage"
)

var (
	tokenSpec = spec{name: "token", args: "rotate|show ...",
		about: `  hearth token rotate --client NAME [--data DIR] [--url URL --token-file FILE]
  hearth token show --client NAME --data DIR [--reveal]

Run 'hearth token rotate --help' or 'hearth token show --help' for each.`}
	tokenRotateSpec = spec{name: "token rotate", args: "--client NAME [--data DIR] [--url URL --token-file FILE]",
		about: `Replaces NAME's generated token; the old one is refused at once. With
--data and no server holding DIR, the rotation happens in DIR itself; while
a server holds DIR, it is asked (memory_token_rotate) over DIR's admin
socket as the local admin. With --token-file instead, the server at --url
is asked, as a client with admin scope.`}
	tokenShowSpec = spec{name: "token show", args: "--client NAME --data DIR [--reveal]",
		about: `Prints the file that holds NAME's generated token; with --reveal, the
token too, and only to a terminal.`}
)

// tokenCmd runs `hearth token rotate|show`.
func tokenCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		tokenSpec.usage(stderr, nil)
		return 2
	}
	switch {
	case args[0] == "rotate":
		return tokenRotate(ctx, args[1:], stdout, stderr)
	case args[0] == "show":
		return tokenShow(args[1:], stdout, stderr)
	case wantsHelp(args[0]):
		tokenSpec.usage(stdout, nil)
		return 0
	}
	return tokenSpec.fail(stderr, "unknown command %q: want rotate or show", args[0])
}

// tokenRotate replaces a generated token. With --data and no server
// holding DIR it rotates in DIR itself; otherwise it asks the server
// (memory_token_rotate: over DIR's admin socket, or with --token-file,
// admin scope), which refuses the old token at once.
func tokenRotate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := tokenRotateSpec.newFlags(stderr)
	name := fs.String("client", "", "the client whose generated token to replace")
	data := fs.String("data", "", "the data directory; with no server running, the rotation happens there, else its server is asked over DIR's admin socket")
	api := addAPIFlags(fs, "admin")
	if code, ok := tokenRotateSpec.parse(fs, args, stdout, stderr); !ok {
		return code
	}
	switch {
	case *name == "":
		return tokenRotateSpec.fail(stderr, "--client is required")
	case fs.NArg() > 0:
		return tokenRotateSpec.fail(stderr, "unexpected argument %q", fs.Arg(0))
	}
	var held error // why the rotation cannot happen in --data itself
	if *data != "" {
		switch ask, err := serverOnly(*data); {
		case err != nil:
			fmt.Fprintf(stderr, "hearth token rotate: no database in %s: %v\n", *data, err)
			return 1
		case ask:
			return askRotate(ctx, api, stderr, stdout, *data, nil, *name)
		}
		db, err := storage.Open(ctx, filepath.Join(*data, dbFile))
		switch {
		case err == nil:
			defer db.Close()
			opts, err := options.Load(options.Path(*data))
			if err != nil {
				fmt.Fprintln(stderr, "hearth token rotate:", err)
				return 1
			}
			path, _, err := server.RotateGeneratedToken(ctx, db, opts.Clients, filepath.Join(*data, "tokens"), *name, storage.SystemClient)
			if err != nil {
				fmt.Fprintln(stderr, "hearth token rotate:", status.Convert(err).Message())
				return 1
			}
			fmt.Fprintf(stdout, "rotated the token of %s (no server running): the new one is in %s; the old one is refused\n", *name, path)
			return 0
		case !errors.Is(err, storage.ErrLocked):
			fmt.Fprintln(stderr, "hearth token rotate:", err)
			return 1
		}
		held = err
	}
	return askRotate(ctx, api, stderr, stdout, *data, held, *name)
}

// askRotate asks the server to rotate client's token (memory_token_rotate):
// the one on data's admin socket, or at --url; held says why data's own
// database could not be used.
func askRotate(ctx context.Context, api apiFlags, stderr, stdout io.Writer, data string, held error, client string) int {
	var resp hearthv1.RotateTokenResponse
	if code := api.ask(ctx, stderr, "hearth token rotate", data, held, "memory_token_rotate", map[string]any{"client": client}, &resp); code != 0 {
		return code
	}
	fmt.Fprintf(stdout, "rotated the token of %s: the new one is in %s on the server; the old one is refused from now on\n", resp.GetClient(), resp.GetTokenPath())
	return 0
}

// tokenShow prints where a generated token is kept, and the token itself
// only with --reveal and only to a terminal (never into a pipe or a file,
// where it would outlive the screen).
func tokenShow(args []string, stdout, stderr io.Writer) int {
	fs := tokenShowSpec.newFlags(stderr)
	name := fs.String("client", "", "the client whose generated token to show")
	data := fs.String("data", "", "the data directory")
	reveal := fs.Bool("reveal", false, "print the token too (only when standard output is a terminal)")
	if code, ok := tokenShowSpec.parse(fs, args, stdout, stderr); !ok {
		return code
	}
	switch {
	case *name == "" || *data == "":
		return tokenShowSpec.fail(stderr, "--client and --data are required")
	case fs.NArg() > 0:
		return tokenShowSpec.fail(stderr, "unexpected argument %q", fs.Arg(0))
	}
	path := filepath.Join(*data, "tokens", *name)
	b, err := os.ReadFile(path)
	token := strings.TrimSpace(string(b))
	if err != nil || token == "" {
		fmt.Fprintf(stderr, "hearth token show: %s has no generated token in %s\n", *name, filepath.Dir(path))
		return 1
	}
	if *reveal && !isTerminal(stdout) {
		fmt.Fprintln(stderr, "hearth token show: --reveal prints the token only to a terminal; read the file instead:", path)
		return 1
	}
	fmt.Fprintln(stdout, path)
	if *reveal {
		fmt.Fprintln(stdout, token)
	}
	return 0
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
