//go:build linux

package pgtest

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The server lives as long as the test binary: once Main returns, postgres
// has exited and its directory is gone. The test runs this test binary
// again as a child that opens a database and reports the server.
func TestMain_StopsServer(t *testing.T) {
	t.Parallel()
	if os.Getenv(childEnv) != "" {
		t.Skip("the child's own run")
	}
	out := runChild(t, "^TestChild_Report$")
	dir, pid := childReport(t, out)
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the server's directory %s is left after Main: %v", dir, err)
	}
	if alive(pid) {
		t.Errorf("postgres (pid %d) still runs after Main", pid)
	}
}

// A test binary killed before Main can stop the server takes postgres with
// it (the parent-death signal), rather than leaving it running.
func TestServer_DiesWithTestBinary(t *testing.T) {
	t.Parallel()
	if os.Getenv(childEnv) != "" {
		t.Skip("the child's own run")
	}
	cmd := childCommand(t, "^TestChild_Hang$")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	sc := bufio.NewScanner(stdout)
	var report bytes.Buffer
	for sc.Scan() {
		report.WriteString(sc.Text() + "\n")
		if strings.HasPrefix(sc.Text(), "pid=") {
			break
		}
	}
	dir, pid := childReport(t, report.String())
	defer os.RemoveAll(dir) // no Main ran to remove it
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); alive(pid); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("postgres (pid %d) still runs 30 s after its test binary was killed", pid)
		}
	}
}

const childEnv = "PGTEST_CHILD"

// TestChild_Report and TestChild_Hang run only as the child of the tests
// above: they start the server and print its directory and pid.
func TestChild_Report(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		t.Skip("run by TestMain_StopsServer")
	}
	report(t)
}

func TestChild_Hang(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		t.Skip("run by TestServer_DiesWithTestBinary")
	}
	report(t)
	time.Sleep(time.Minute) // killed before it ends
}

func report(t *testing.T) {
	Open(t)
	serverMu.Lock()
	dir, pid := running.dir, running.cmd.Process.Pid
	serverMu.Unlock()
	os.Stdout.WriteString("dir=" + dir + "\npid=" + strconv.Itoa(pid) + "\n")
}

func childCommand(t *testing.T, run string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run", run, "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	return cmd
}

func runChild(t *testing.T, run string) string {
	out, err := childCommand(t, run).CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v: %s", err, out)
	}
	return string(out)
}

func childReport(t *testing.T, out string) (dir string, pid int) {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, "dir="); ok {
			dir = v
		}
		if v, ok := strings.CutPrefix(line, "pid="); ok {
			pid, _ = strconv.Atoi(v)
		}
	}
	if dir == "" || pid == 0 || !filepath.IsAbs(dir) {
		t.Fatalf("the child reported no server: %s", out)
	}
	return dir, pid
}

// alive reports whether process pid exists (and is no zombie).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	fields := strings.Fields(string(stat))
	return len(fields) < 3 || fields[2] != "Z"
}
