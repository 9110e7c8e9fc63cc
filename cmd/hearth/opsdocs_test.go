package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/protoc-gen-openapiv2/options"
	"google.golang.org/protobuf/proto"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"github.com/hearth-memory/hearth/server"
	hoptions "github.com/hearth-memory/hearth/server/options"
	"github.com/hearth-memory/hearth/storage"
)

// words collapses a document's whitespace, so a phrase can be found
// whatever its line breaks.
func words(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(strings.Fields(string(b)), " ")
}

// TestDocs_Operations holds docs/operations.md and the add-on's DOCS.md to
// the code: every hearth command they show parses with the subcommand's
// own flags, the options example is valid, and the numbers they state are
// the constants and proto limits the code enforces.
func TestDocs_Operations(t *testing.T) {
	t.Parallel()
	t.Run("Commands", func(t *testing.T) {
		n := 0
		for _, f := range fences(t, "docs/operations.md") {
			if f.lang != "sh" {
				continue
			}
			for _, line := range strings.Split(strings.TrimSpace(f.code), "\n") {
				if !strings.HasPrefix(line, "hearth ") {
					continue
				}
				n++
				// The subcommand's usage lists its flags; every flag the
				// line uses must be among them.
				fields := strings.Fields(line)[1:]
				sub := fields[:1]
				if fields[0] == "token" {
					sub = fields[:2]
				}
				var out, errOut bytes.Buffer
				if code := run(context.Background(), append(append([]string(nil), sub...), "-h"), &out, &errOut); code != 0 {
					t.Errorf("docs/operations.md:%d: %s -h: exit %d", f.line, strings.Join(sub, " "), code)
					continue
				}
				for _, w := range fields {
					if name, ok := strings.CutPrefix(w, "--"); ok && !strings.Contains(out.String(), "  --"+name+" ") && !strings.Contains(out.String(), "  --"+name+"\n") {
						t.Errorf("docs/operations.md:%d: %q: %s has no flag --%s", f.line, line, strings.Join(sub, " "), name)
					}
				}
			}
		}
		if n < 7 {
			t.Errorf("%d hearth commands in docs/operations.md, want every subcommand shown", n)
		}
	})
	t.Run("OptionsExample", func(t *testing.T) {
		for _, f := range fences(t, "docs/operations.md") {
			if f.lang == "json" {
				if _, err := hoptions.Parse(strings.NewReader(f.code)); err != nil {
					t.Errorf("docs/operations.md:%d: %v", f.line, err)
				}
			}
		}
	})
	t.Run("Numbers", func(t *testing.T) {
		fd := (&hearthv1.ImportRequest{}).ProtoReflect().Descriptor().Fields().ByName("lines")
		o, _ := proto.GetExtension(fd.Options(), options.E_Openapiv2Field).(*options.JSONSchema)
		maxBytes := int(o.GetExtensions()[server.MaxBytesExtension].GetNumberValue())
		ops, addon := words(t, "docs/operations.md"), words(t, "addon/hearth/DOCS.md")
		for _, c := range []struct{ doc, name, want string }{
			{ops, "operations.md", fmt.Sprintf("at most %d source-and-reason pairs are kept apart", server.RefusalEntries)},
			{ops, "operations.md", fmt.Sprintf("add at most %d audit rows for each minute", server.MaxRefusalRowsPerMinute)},
			{ops, "operations.md", "calls of at most " + thousands(importChunkBytes) + " bytes"},
			{ops, "operations.md", "and of at most " + thousands(server.MaxImportLines) + " lines"},
			{ops, "operations.md", "more than " + thousands(maxBytes) + " bytes"},
			{ops, "operations.md", fmt.Sprintf("lists the first %d failed lines", maxImportFailures(t))},
			{ops, "operations.md", "a call whose " + thousands(server.MaxImportLines) + " lines all"},
			{ops, "operations.md", fmt.Sprintf("refused calls of both kinds add at most %d rows a minute", server.MaxRefusalKinds*server.MaxRefusalRowsPerMinute)},
			{ops, "operations.md", fmt.Sprintf("past %d client-and-method pairs", server.RefusalEntries)},
			{ops, "operations.md", fmt.Sprintf("may have at most %d calls open at once", server.MaxConcurrentStreams)},
			{ops, "operations.md", fmt.Sprintf("at most %d streaming calls open at once, and at most %d from one source address", server.MaxOpenStreams, server.MaxOpenStreamsPerPeer)},
			{addon, "DOCS.md", fmt.Sprintf("at most %d calls open on one connection, and at most %d streaming calls", server.MaxConcurrentStreams, server.MaxOpenStreams)},
			{addon, "DOCS.md", fmt.Sprintf("at most %d such source-and-reason pairs are kept apart", server.RefusalEntries)},
			{addon, "DOCS.md", fmt.Sprintf("at most **%d audit rows per minute**", server.MaxRefusalRowsPerMinute)},
			{addon, "DOCS.md", "at most " + thousands(maxBytes) + " bytes per call"},
			{addon, "DOCS.md", "kept in memory and written once a second, so that no read waits for a write"},
		} {
			if !strings.Contains(strings.ToLower(c.doc), strings.ToLower(c.want)) {
				t.Errorf("%s does not say %q", c.name, c.want)
			}
		}
		if storage.UsageFlushInterval != time.Second {
			t.Errorf("DOCS.md says usage counts are written once a second; storage.UsageFlushInterval is %v", storage.UsageFlushInterval)
		}
	})
}

var thousandsRE = regexp.MustCompile(`(\d)(\d{3})($|,)`)

// thousands writes n with commas: 900000 is 900,000.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for {
		t := thousandsRE.ReplaceAllString(s, "$1,$2$3")
		if t == s {
			return s
		}
		s = t
	}
}

// maxImportFailures is how many failures a memory_import reply lists, as
// the proto declares it.
func maxImportFailures(t *testing.T) int {
	fd := (&hearthv1.ImportResponse{}).ProtoReflect().Descriptor().Fields().ByName("failed")
	o, _ := proto.GetExtension(fd.Options(), options.E_Openapiv2Field).(*options.JSONSchema)
	if o.GetMaxItems() == 0 {
		t.Fatal("ImportResponse.failed declares no max_items")
	}
	return int(o.GetMaxItems())
}
