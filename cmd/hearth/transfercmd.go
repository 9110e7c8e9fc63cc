package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"github.com/hearth-memory/hearth/server"
)

var exportSpec = spec{name: "export", args: "(--data DIR | [--url URL] --token-file FILE) [--prefix NS] [--out FILE]",
	about: `Writes every record (or those under --prefix) as JSON Lines, every page of
memory_export, to --out (created 0600) or standard output. With --data it
asks the server running on DIR over DIR's admin socket, as the local admin;
otherwise the server at --url, as the token's client (export scope).`}

// exportCmd runs `hearth export`: every page of memory_export into one
// JSON Lines file (0600: it holds all that memory says), or stdout.
func exportCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := exportSpec.newFlags(stderr)
	prefix := fs.String("prefix", "", "only namespaces equal to this or below it, e.g. github/acme (default: all)")
	out := fs.String("out", "", "the JSON Lines file to write; it must not exist (default: standard output)")
	data := addDataFlag(fs)
	api := addAPIFlags(fs, "export")
	if code, ok := exportSpec.parse(fs, args, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return exportSpec.fail(stderr, "unexpected argument %q", fs.Arg(0))
	}
	c, code := api.connect(exportSpec, *data, stderr)
	if c == nil {
		return code
	}
	w := stdout
	var f *os.File
	if *out != "" {
		var err error
		if f, err = os.OpenFile(*out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600); err != nil {
			fmt.Fprintln(stderr, "hearth export:", err)
			return 1
		}
		w = f
	}
	n, err := exportAll(ctx, c, *prefix, w)
	if f != nil {
		if serr := f.Sync(); err == nil {
			err = serr
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(*out)
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "hearth export:", err)
		return 1
	}
	where := "standard output"
	if *out != "" {
		where = *out
	}
	fmt.Fprintf(stderr, "exported %d records to %s\n", n, where)
	return 0
}

// exportPage is the page size the CLI asks for: memory_export's maximum.
const exportPage = 1000

func exportAll(ctx context.Context, c *apiClient, prefix string, w io.Writer) (int, error) {
	n, cursor := 0, ""
	for {
		req := map[string]any{"limit": exportPage}
		if prefix != "" {
			req["namespace_prefix"] = prefix
		}
		if cursor != "" {
			req["cursor"] = cursor
		}
		var resp hearthv1.ExportResponse
		if err := c.call(ctx, "memory_export", req, &resp); err != nil {
			return n, err
		}
		if _, err := io.WriteString(w, resp.GetLines()); err != nil {
			return n, err
		}
		n += int(resp.GetRecords())
		if cursor = resp.GetNextCursor(); cursor == "" {
			return n, nil
		}
	}
}

// importChunkBytes bounds one memory_import call's lines as they travel
// (escaped in the JSON body), under the server's 1 MiB body limit; a call
// also carries at most server.MaxImportLines lines.
const importChunkBytes = 800_000

// importCmd runs `hearth import FILE`: the file's lines through
// memory_import, a chunk at a time; failures are reported by the file's
// line numbers. It exits 1 when any line failed.
var importSpec = spec{name: "import", args: "(--data DIR | [--url URL] --token-file FILE) [--as-active] FILE",
	about: `Reads the JSON Lines FILE (what hearth export writes) through memory_import,
a chunk at a time. Without --as-active every record arrives as a candidate
for review (a client with write scope); with it, as exported (admin scope).
With --data it asks the server running on DIR over DIR's admin socket, as
the local admin. Failures are listed by FILE's line numbers, and the exit
status is 1.`}

func importCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := importSpec.newFlags(stderr)
	asActive := fs.Bool("as-active", false, "write records as exported (status, revision, writer, links) instead of as candidates; needs admin scope")
	data := addDataFlag(fs)
	api := addAPIFlags(fs, "write")
	if code, ok := importSpec.parse(fs, args, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return importSpec.fail(stderr, "want one FILE, the JSON Lines to import")
	}
	c, code := api.connect(importSpec, *data, stderr)
	if c == nil {
		return code
	}
	in, err := os.Open(fs.Arg(0))
	if err != nil {
		fmt.Fprintln(stderr, "hearth import:", err)
		return 1
	}
	defer in.Close()
	sum, err := importLines(ctx, c, in, *asActive)
	for _, f := range sum.failed {
		fmt.Fprintln(stdout, f)
	}
	sum.report(stdout, *asActive)
	if err != nil {
		fmt.Fprintln(stderr, "hearth import:", err)
		return 1
	}
	if sum.failedCount > 0 {
		return 1
	}
	return 0
}

type importSummary struct {
	imported, unchanged int
	// superseded counts the superseded lines skipped without --as-active.
	superseded int
	// failed describes the failed lines the server listed; failedCount
	// counts every failed line (a reply lists the first ones of its call).
	failed      []string
	failedCount int
}

// report prints the counts and, without --as-active, what the imported
// records became and why, and why lines were skipped.
func (s importSummary) report(w io.Writer, asActive bool) {
	if asActive {
		fmt.Fprintf(w, "imported %d, unchanged %d, failed %d\n", s.imported, s.unchanged, s.failedCount)
		return
	}
	fmt.Fprintf(w, "imported %d, unchanged %d, skipped %d, failed %d\n", s.imported, s.unchanged, s.superseded, s.failedCount)
	if s.imported > 0 {
		fmt.Fprintf(w, "the %d imported are candidates awaiting review: without --as-active every record arrives as a candidate "+
			"(revision 1, source import, written by this client, no supersession links), whatever its status in the file; "+
			"--as-active (admin scope) keeps statuses, revisions, writers and links\n", s.imported)
	}
	if s.superseded > 0 {
		fmt.Fprintf(w, "skipped %d superseded: a record another replaced is imported only with --as-active, beside its replacement\n", s.superseded)
	}
}

// superseded reports whether an export line is a superseded record.
// Lines that do not decode are left to the server, which says why.
func superseded(line []byte) bool {
	var rec struct {
		Status string `json:"status"`
	}
	return json.Unmarshal(line, &rec) == nil && rec.Status == "superseded"
}

func importLines(ctx context.Context, c *apiClient, r io.Reader, asActive bool) (importSummary, error) {
	var (
		sum   importSummary
		chunk bytes.Buffer
		size  int // chunk's lines as escaped in JSON
		first = 1 // the file's line number of chunk's first line
		lines int // the chunk's lines
	)
	// send imports the chunk; the request numbers its lines from 1.
	send := func() error {
		defer func() { chunk.Reset(); size = 0; lines = 0 }()
		if strings.TrimSpace(chunk.String()) == "" {
			return nil
		}
		var resp hearthv1.ImportResponse
		if err := c.call(ctx, "memory_import", map[string]any{"lines": chunk.String(), "as_active": asActive}, &resp); err != nil {
			return err
		}
		sum.imported += int(resp.GetImported())
		sum.unchanged += int(resp.GetUnchanged())
		sum.failedCount += int(resp.GetFailedCount())
		for _, f := range resp.GetFailed() {
			msg := fmt.Sprintf("line %d: ", first+int(f.GetLine())-1)
			if f.GetField() != "" {
				msg += f.GetField() + ": "
			}
			msg += f.GetMessage()
			if f.GetPattern() != "" {
				msg += " (pattern " + f.GetPattern() + ")"
			}
			sum.failed = append(sum.failed, msg)
		}
		if unlisted := int(resp.GetFailedCount()) - len(resp.GetFailed()); unlisted > 0 {
			sum.failed = append(sum.failed, fmt.Sprintf("lines %d to %d: %d more failed lines, not listed (a reply lists the first %d of its call)",
				first, first+lines-1, unlisted, len(resp.GetFailed())))
		}
		return nil
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), importChunkBytes)
	n := 0
	for sc.Scan() {
		n++
		text := sc.Text() + "\n"
		if !asActive && superseded(sc.Bytes()) {
			// Skipped, and sent as a blank line, which the server passes
			// over: the chunk's line numbers stay the file's.
			sum.superseded++
			text = "\n"
		}
		esc, _ := json.Marshal(text) // a string always marshals
		if size > 0 && (size+len(esc) > importChunkBytes || lines == server.MaxImportLines) {
			if err := send(); err != nil {
				return sum, err
			}
			first = n
		}
		chunk.WriteString(text)
		size += len(esc)
		lines++
	}
	if err := sc.Err(); err != nil {
		return sum, fmt.Errorf("line %d: %w", n+1, err)
	}
	return sum, send()
}
