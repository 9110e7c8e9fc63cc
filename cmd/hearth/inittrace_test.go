package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// initCost is one package's initialisation as GODEBUG=inittrace=1 reports
// it: bytes and allocations (its clock time is not read: counts, not times).
type initCost struct {
	bytes, allocs int64
}

// initCosts runs bin with args under GODEBUG=inittrace=1 and returns each
// package's init cost.
func initCosts(t *testing.T, bin string, args ...string) map[string]initCost {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %v: %v\n%s", bin, args, err, stderr.Bytes())
	}
	costs := map[string]initCost{}
	sc := bufio.NewScanner(&stderr)
	for sc.Scan() {
		// init github.com/x/y @1.2 ms, 0.5 ms clock, 27128 bytes, 237 allocs
		f := strings.Fields(sc.Text())
		if len(f) != 11 || f[0] != "init" || f[8] != "bytes," || f[10] != "allocs" {
			continue
		}
		b, err1 := strconv.ParseInt(f[7], 10, 64)
		a, err2 := strconv.ParseInt(f[9], 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("inittrace line %q: %v %v", sc.Text(), err1, err2)
		}
		costs[f[1]] = initCost{b, a}
	}
	if len(costs) < 100 {
		t.Fatalf("got %d packages in the init trace, want the binary's (over 100):\n%s", len(costs), stderr.Bytes())
	}
	return costs
}

// TestInitCost guards what every hearth process pays before main, a hook
// included (docs/capture.md, "Hook latency"): the screen compiles nothing
// and builds no table at init (3 MB and 16,600 allocations before it was
// made lazy); the hook package, the model schemas and the workers'
// expressions compile nothing either; and no package of Hearth's allocates
// more than 512 KiB in its init. It counts bytes and allocations, which do
// not depend on the machine's load; the time is the benchmark's
// (BenchmarkHookProcess).
func TestInitCost(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the hearth binary")
	}
	t.Parallel()
	costs := initCosts(t, buildHearth(t), "--version")
	const mod = "github.com/hearth-memory/hearth/"
	for pkg, max := range map[string]initCost{
		// A few maps and the tables' shells; no expression, no automaton.
		mod + "storage/screen": {bytes: 64 << 10, allocs: 1000},
		// Flags and small tables; no expression.
		mod + "cmd/hearth/internal/hook": {bytes: 32 << 10, allocs: 500},
		// No JSON schema compiled (models.MustSchema on first use).
		mod + "server/answers": {bytes: 32 << 10, allocs: 500},
		// No schema, and no duplicate guard's 300 KB expression.
		mod + "server/workers": {bytes: 64 << 10, allocs: 1000},
	} {
		got, ok := costs[pkg]
		if !ok {
			t.Errorf("%s: got no init in the trace, want one", pkg)
			continue
		}
		if got.bytes > max.bytes || got.allocs > max.allocs {
			t.Errorf("%s init: got %d bytes, %d allocations; want at most %d, %d", pkg, got.bytes, got.allocs, max.bytes, max.allocs)
		}
	}
	for pkg, got := range costs {
		if strings.HasPrefix(pkg, mod) && got.bytes > 512<<10 {
			t.Errorf("%s init: got %d bytes, want at most 512 KiB: make what it builds lazy (sync.OnceValue)", pkg, got.bytes)
		}
	}
}
