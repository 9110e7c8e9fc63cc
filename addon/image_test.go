package addon

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hearth-memory/hearth/server/version"
)

const module = "github.com/hearth-memory/hearth"

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	cmd, args string
}

func dockerfile(tb testing.TB) []instruction {
	tb.Helper()
	var out []instruction
	var cur strings.Builder
	for _, line := range strings.Split(string(readFile(tb, filepath.Join(addonDir, "Dockerfile"))), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "#") || (line == "" && cur.Len() == 0) {
			continue
		}
		more := strings.HasSuffix(line, `\`)
		cur.WriteString(strings.TrimSuffix(line, `\`))
		if more {
			cur.WriteByte(' ')
			continue
		}
		cmd, args, _ := strings.Cut(strings.TrimSpace(cur.String()), " ")
		out = append(out, instruction{strings.ToUpper(cmd), strings.Join(strings.Fields(args), " ")})
		cur.Reset()
	}
	return out
}

// goBuild returns the RUN instruction that builds the binary.
func goBuild(tb testing.TB, ins []instruction) string {
	tb.Helper()
	var build []string
	for _, r := range find(ins, "RUN") {
		if strings.Contains(r.args, "go build") {
			build = append(build, r.args)
		}
	}
	if len(build) != 1 {
		tb.Fatalf("Dockerfile: %d RUN instructions with go build, want 1", len(build))
	}
	return build[0]
}

// buildTags returns the tags of the go build in run.
func buildTags(tb testing.TB, run string) []string {
	tb.Helper()
	f := strings.Fields(run)
	i := slices.Index(f, "-tags")
	if i < 0 || i+1 == len(f) {
		tb.Fatalf("go build %q: no -tags", run)
	}
	return strings.Split(f[i+1], ",")
}

func find(ins []instruction, cmd string) []instruction {
	var out []instruction
	for _, in := range ins {
		if in.cmd == cmd {
			out = append(out, in)
		}
	}
	return out
}

// execForm decodes the JSON (exec) form of ENTRYPOINT, CMD or HEALTHCHECK CMD.
func execForm(tb testing.TB, s string) []string {
	tb.Helper()
	var v []string
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		tb.Errorf("%s: want the JSON exec form: %v", s, err)
	}
	return v
}

func only(tb testing.TB, ins []instruction, cmd string) instruction {
	tb.Helper()
	got := find(ins, cmd)
	if len(got) != 1 {
		tb.Fatalf("Dockerfile: %d %s instructions, want 1", len(got), cmd)
	}
	return got[0]
}

func TestDockerfile(t *testing.T) {
	t.Parallel()
	ins := dockerfile(t)
	froms := find(ins, "FROM")
	if len(froms) != 2 {
		t.Fatalf("Dockerfile: %d stages, want a build stage and a final one", len(froms))
	}
	t.Run("BuildStage", func(t *testing.T) {
		// The Go image of the toolchain go.mod names: the Go the tests
		// and benchmarks ran on.
		want := "--platform=$BUILDPLATFORM golang:" + goToolchain(t) + " "
		if got := froms[0].args; !strings.HasPrefix(got, want) {
			t.Errorf("first FROM %q, want %q", got, want+"AS build")
		}
		build := goBuild(t, ins)
		for _, want := range []string{"CGO_ENABLED=0", "GOOS=linux", "GOARCH=$TARGETARCH", "-trimpath", `-ldflags="-s -w"`, "-o /hearth", "./cmd/hearth"} {
			if !strings.Contains(build, want) {
				t.Errorf("go build %q lacks %s", build, want)
			}
		}
		// timetzdata: the zone database (the image has none); postgres:
		// database_url; grpcnotrace: the binary within maxBinaryBytes
		// (TestImageBinarySize).
		for _, want := range []string{"timetzdata", "postgres", "grpcnotrace"} {
			if !slices.Contains(buildTags(t, build), want) {
				t.Errorf("go build %q lacks the %s tag", build, want)
			}
		}
	})
	t.Run("FinalStage", func(t *testing.T) {
		if froms[1].args != "scratch" {
			t.Errorf("final FROM %q, want scratch", froms[1].args)
		}
		if got := execForm(t, only(t, ins, "ENTRYPOINT").args); !reflect.DeepEqual(got, []string{"/hearth"}) {
			t.Errorf("ENTRYPOINT %q", got)
		}
		want := []string{"serve", "--data", "/data", "--listen", "0.0.0.0:8765", "--ingress-listen", "0.0.0.0:8099"}
		if got := execForm(t, only(t, ins, "CMD").args); !reflect.DeepEqual(got, want) {
			t.Errorf("CMD %q, want %q", got, want)
		}
		hc := only(t, ins, "HEALTHCHECK").args
		_, cmd, ok := strings.Cut(hc, "CMD ")
		if got := execForm(t, cmd); !ok || !reflect.DeepEqual(got, []string{"/hearth", "healthcheck"}) {
			t.Errorf("HEALTHCHECK %q, want CMD [\"/hearth\", \"healthcheck\"]", hc)
		}
		if got := only(t, ins, "EXPOSE").args; got != "8765" {
			t.Errorf("EXPOSE %q, want 8765", got)
		}
		var buildVersion string
		for _, a := range find(ins, "ARG") {
			if v, ok := strings.CutPrefix(a.args, "BUILD_VERSION="); ok {
				buildVersion = v
			}
		}
		if buildVersion != version.Version {
			t.Errorf("ARG BUILD_VERSION=%q, want version.Version %q", buildVersion, version.Version)
		}
	})
	// The CMD and HEALTHCHECK use only subcommands and flags the binary has.
	t.Run("BinaryFlags", func(t *testing.T) {
		lits := stringLiterals(t, filepath.Join(repoRoot, "cmd", "hearth"))
		for _, want := range []string{"serve", "healthcheck", "data", "listen", "ingress-listen"} {
			if !lits[want] {
				t.Errorf("cmd/hearth has no %q: the Dockerfile uses it", want)
			}
		}
	})
	// The build stage copies only some directories of the repository: they
	// must hold every package of the binary.
	t.Run("CopiesEveryPackage", func(t *testing.T) {
		goBin, err := exec.LookPath("go")
		if err != nil {
			t.Skip("no go command to list the binary's packages")
		}
		tags := strings.Join(buildTags(t, goBuild(t, ins)), ",")
		cmd := exec.Command(goBin, "list", "-tags", tags, "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "./cmd/hearth")
		cmd.Dir = repoRoot
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
		}
		var copied []string
		for _, c := range find(ins, "COPY") {
			if f := strings.Fields(c.args); len(f) == 2 && !strings.HasPrefix(f[0], "--") {
				copied = append(copied, strings.TrimSuffix(f[0], "/"))
			}
		}
		for _, pkg := range strings.Fields(string(out)) {
			rel, ok := strings.CutPrefix(pkg, module+"/")
			if !ok {
				continue
			}
			top, _, _ := strings.Cut(rel, "/")
			if !slices.Contains(copied, top) {
				t.Errorf("the Dockerfile does not COPY %s/, which holds %s", top, pkg)
			}
		}
	})
}

// stringLiterals returns the string constants in the non-test Go files of dir.
func stringLiterals(tb testing.TB, dir string) map[string]bool {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		tb.Fatal(err)
	}
	lits := make(map[string]bool)
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			tb.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if b, ok := n.(*ast.BasicLit); ok && b.Kind == token.STRING {
				if s, err := strconv.Unquote(b.Value); err == nil {
					lits[s] = true
				}
			}
			return true
		})
	}
	return lits
}

func TestImages(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		w, h int
	}{
		{"icon.png", 128, 128},
		{"logo.png", 250, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := readFile(t, filepath.Join(addonDir, tc.name))
			img, err := png.Decode(bytes.NewReader(b))
			if err != nil {
				t.Fatalf("not a PNG: %v", err)
			}
			if got := img.Bounds().Size(); got != image.Pt(tc.w, tc.h) {
				t.Fatalf("size %v, want %dx%d", got, tc.w, tc.h)
			}
			// Drawn, not blank: many colours, and opaque in the middle.
			colours := make(map[[4]uint32]bool)
			for y := 0; y < tc.h; y++ {
				for x := 0; x < tc.w; x++ {
					r, g, b, a := img.At(x, y).RGBA()
					colours[[4]uint32{r, g, b, a}] = true
				}
			}
			if len(colours) < 100 {
				t.Errorf("%d colours; is it drawn?", len(colours))
			}
			if _, _, _, a := img.At(tc.w/2, tc.h/2).RGBA(); a != 0xffff {
				t.Errorf("the centre is not opaque (alpha %#x)", a)
			}
		})
	}
}

// goToolchain returns the Go version of go.mod's toolchain line ("1.27.4"
// for "toolchain go1.27.4").
func goToolchain(tb testing.TB) string {
	tb.Helper()
	for _, line := range strings.Split(string(readFile(tb, filepath.Join(repoRoot, "go.mod"))), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "toolchain go"); ok {
			return v
		}
	}
	tb.Fatal("go.mod has no toolchain line")
	return ""
}

// maxBinaryBytes is the add-on binary's budget, 30 MB (10^6 bytes), kept
// for small machines such as a Raspberry Pi (docs/operations.md, "The binary
// with and without PostgreSQL").
const maxBinaryBytes = 30_000_000

// goArch is the GOARCH of each add-on arch.
var goArch = map[string]string{"aarch64": "arm64", "amd64": "amd64"}

// TestImageBinarySize runs the Dockerfile's go build, as written, for each
// arch config.yaml names, and holds the binary to maxBinaryBytes.
func TestImageBinarySize(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary once per arch")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build the binary")
	}
	run := goBuild(t, dockerfile(t))
	arches, _ := config(t)["arch"].([]any)
	if len(arches) == 0 {
		t.Fatal("config.yaml names no arch")
	}
	for _, a := range arches {
		arch, _ := a.(string)
		t.Run(arch, func(t *testing.T) {
			t.Parallel()
			goarch, ok := goArch[arch]
			if !ok {
				t.Fatalf("arch %q: no GOARCH known", arch)
			}
			out := filepath.Join(t.TempDir(), "hearth")
			cmd := exec.Command("sh", "-c", strings.Replace(run, "-o /hearth", `-o "$OUT"`, 1))
			cmd.Dir = repoRoot
			cmd.Env = append(os.Environ(), "TARGETARCH="+goarch, "OUT="+out,
				"PATH="+filepath.Dir(goBin)+string(os.PathListSeparator)+os.Getenv("PATH"))
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%s: %v\n%s", run, err, b)
			}
			fi, err := os.Stat(out)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s (GOARCH=%s): %d bytes", arch, goarch, fi.Size())
			if fi.Size() > maxBinaryBytes {
				t.Errorf("%s binary is %d bytes, over the budget of %d", arch, fi.Size(), maxBinaryBytes)
			}
		})
	}
}
