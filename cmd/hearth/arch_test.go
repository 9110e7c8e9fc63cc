package main

import (
	"bufio"
	"bytes"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const module = "github.com/hearth-memory/hearth"

// goList runs `go list` over the module with the given format.
func goList(t *testing.T, format string) []string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the go command")
	}
	out, err := exec.Command("go", "list", "-f", format, module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if sc.Text() != "" {
			lines = append(lines, sc.Text())
		}
	}
	return lines
}

// under reports whether pkg is dir or inside it (module-relative).
func under(pkg, dir string) bool {
	p := module + "/" + dir
	return pkg == p || strings.HasPrefix(pkg, p+"/")
}

// transports are the packages that serve a protocol; they may share the
// contract (package gateway) but never import each other.
var transportPkgs = []string{"gateway/rest", "gateway/page", "mcpbridge"}

func transportOf(pkg string) string {
	for _, tr := range transportPkgs {
		if under(pkg, tr) {
			return tr
		}
	}
	return ""
}

// testSupport are the packages only _test files import: a harness may
// import what its folder's code may not (servertest starts the whole
// server, transports included; pgtest starts a PostgreSQL server and
// storagetest opens its databases), since no shipped code depends on it.
var testSupport = []string{"gateway/gatewaytest", "server/servertest", "storage/internal/pgtest", "storage/storagetest"}

// devTools are the programs of the repository that are never shipped and
// run what the tests run: cmd/eval (`make eval`, `make eval-postgres`)
// starts the tests' private PostgreSQL through storagetest. They may
// import test support; TestImports_OneWay checks that nothing shipped
// imports them.
var devTools = []string{"cmd/eval"}

func isDevTool(pkg string) bool {
	for _, d := range devTools {
		if under(pkg, d) {
			return true
		}
	}
	return false
}

func isTestSupport(pkg string) bool {
	for _, ts := range testSupport {
		if under(pkg, ts) {
			return true
		}
	}
	return false
}

// TestImports_OneWay reads `go list -deps` (the transitive imports of every
// package, tests excluded) and fails on an arrow the architecture forbids:
// transport to transport, server to any transport or the contract, storage
// to gen, server or a transport, storage/internal to the storage root,
// the contract or a transport to storage or server, and any package to a
// test-support package (testSupport, whose own imports are free) but a dev
// tool (devTools), and any package but a dev tool to a dev tool.
func TestImports_OneWay(t *testing.T) {
	t.Parallel()
	lines := goList(t, `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`)
	checked := 0
	for _, line := range lines {
		fields := strings.Fields(line)
		pkg, deps := fields[0], fields[1:]
		if isTestSupport(pkg) {
			continue
		}
		checked++
		for _, dep := range deps {
			if !strings.HasPrefix(dep, module+"/") {
				continue
			}
			var why string
			switch {
			case isTestSupport(dep) && !isDevTool(pkg):
				why = "a package imports test support, which only _test files and the dev tools may"
			case isDevTool(dep) && !isDevTool(pkg):
				why = "a package imports a dev tool, which is never shipped"
			case transportOf(pkg) != "" && transportOf(dep) != "" && transportOf(dep) != transportOf(pkg):
				why = "a transport imports another transport"
			case under(pkg, "server") && (under(dep, "gateway") || under(dep, "mcpbridge")):
				why = "server imports a transport"
			case under(pkg, "storage") && (under(dep, "gen") || under(dep, "server") || under(dep, "gateway") || under(dep, "mcpbridge")):
				why = "storage imports gen, server or a transport"
			case under(pkg, "storage/internal") && dep == module+"/storage":
				why = "the engine below the record domain imports the domain (docs/design.md, §1b)"
			case (under(pkg, "gateway") || under(pkg, "mcpbridge")) && (under(dep, "storage") || under(dep, "server")):
				why = "a transport imports storage or server"
			default:
				continue
			}
			t.Errorf("%s -> %s: %s", strings.TrimPrefix(pkg, module+"/"), strings.TrimPrefix(dep, module+"/"), why)
		}
	}
	if checked < 15 {
		t.Fatalf("checked %d packages; go list found too few", checked)
	}
}

// maxDocLines bounds a package doc comment: what a reader needs to find
// their way; tables and long rules live in docs/.
const maxDocLines = 25

// TestPackageDocs fails when a package (generated code aside) has no doc
// comment, has more than one, or has one longer than maxDocLines lines.
func TestPackageDocs(t *testing.T) {
	t.Parallel()
	for _, line := range goList(t, "{{.ImportPath}}\t{{.Dir}}\t{{join .GoFiles \",\"}}") {
		parts := strings.Split(line, "\t")
		pkg, dir, files := parts[0], parts[1], strings.Split(parts[2], ",")
		if under(pkg, "gen") || parts[2] == "" {
			continue
		}
		var docs []string
		for _, f := range files {
			file, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, f), nil, parser.PackageClauseOnly|parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			if file.Doc == nil {
				continue
			}
			docs = append(docs, f)
			if n := len(file.Doc.List); n > maxDocLines {
				t.Errorf("%s: the package doc in %s is %d lines; keep it within %d and move detail to docs/", pkg, f, n, maxDocLines)
			}
		}
		switch len(docs) {
		case 0:
			t.Errorf("%s: no package doc comment", pkg)
		case 1:
		default:
			t.Errorf("%s: package doc comments in %v; keep exactly one", pkg, docs)
		}
	}
}

// TestCitations_InRepository fails when a Go file (generated code aside)
// cites what a clean clone does not hold: the author's spec, the shared
// notes beside the repository or their seed files, anywhere in the file;
// or, in a comment, a docs/ page that does not exist. The behaviour such
// citations meant is in docs/design.md.
func TestCitations_InRepository(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	// Spelled so that this file does not match itself.
	outside := regexp.MustCompile(`\bSPEC\b|\.\./shared|/work[/]shared|\bseeds[/]`)
	docPage := regexp.MustCompile(`(?:^|[^A-Za-z0-9_./-])(docs/[A-Za-z0-9_./-]*[A-Za-z0-9_-]\.md)`)
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel == "gen" || strings.HasPrefix(d.Name(), ".") && rel != "." || d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		files++
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(src), "\n") {
			if m := outside.FindString(line); m != "" {
				t.Errorf("%s:%d cites %q, outside the repository; cite docs/design.md (requirement ids like R-S1 may stay)", rel, i+1, m)
			}
		}
		if !strings.Contains(string(src), "docs/") {
			return nil
		}
		file, err := parser.ParseFile(token.NewFileSet(), path, src, parser.ParseComments)
		if err != nil {
			return err
		}
		for _, group := range file.Comments {
			for _, m := range docPage.FindAllStringSubmatch(group.Text(), -1) {
				if _, err := os.Stat(filepath.Join(root, m[1])); err != nil {
					t.Errorf("%s: a comment cites %s, which does not exist", rel, m[1])
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("read %d Go files under %s; expected the whole repository", files, root)
	}
}
