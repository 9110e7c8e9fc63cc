package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/hearth-memory/hearth/storage/testwait"
)

// lockedBuffer is a bytes.Buffer safe for the server's and the test's
// goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// serveFor runs `hearth serve` over dir until calls has run, then stops it
// as SIGTERM would, and returns what it printed.
func serveFor(t *testing.T, dir string, calls func(url string)) (stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb lockedBuffer
	exited := make(chan int, 1)
	go func() { exited <- run(ctx, []string{"serve", "--data", dir, "--listen", "127.0.0.1:0"}, &out, &errb) }()
	listening := regexp.MustCompile(`listening on (127\.0\.0\.1:\d+)`)
	var addr string
	testwait.WaitFor(t, "serve prints its listening line", func() bool {
		select {
		case code := <-exited:
			t.Fatalf("serve exited %d: %s", code, errb.String())
		default:
		}
		if m := listening.FindStringSubmatch(out.String()); m != nil {
			addr = m[1]
		}
		return addr != ""
	})
	calls("http://" + addr)
	cancel()
	if code := <-exited; code != 0 {
		t.Fatalf("serve exited %d: %s", code, errb.String())
	}
	return out.String(), errb.String()
}

// TestServe_Output: start says where the tokens are only when there are
// some; every call is one access-log line (tool, client, transport, code,
// duration) that carries no argument or token; shutdown is logged.
func TestServe_Output(t *testing.T) {
	t.Parallel()
	t.Run("OKGeneratedTokens", func(t *testing.T) {
		dir := t.TempDir()
		const secret = "a-content-word-that-must-not-be-logged"
		var token string
		stdout, stderr := serveFor(t, dir, func(url string) {
			b, err := os.ReadFile(filepath.Join(dir, "tokens", "claude-code"))
			if err != nil {
				t.Fatal(err)
			}
			token = strings.TrimSpace(string(b))
			for _, tok := range []string{token, "hearth_wrong"} {
				req, _ := http.NewRequest(http.MethodPost, url+"/api/memory_store",
					strings.NewReader(`{"namespace":"global","type":"note","title":"t","content":"`+secret+`"}`))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+tok)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
			}
			// The local admin, over the admin socket.
			if code, client := whoami(t, socketClient(t, filepath.Join(dir, AdminSocket)), "http://localhost", ""); code != http.StatusOK || client != LocalAdminName {
				t.Errorf("whoami over the admin socket: %d %q", code, client)
			}
		})
		if !strings.Contains(stdout, "client tokens are in "+filepath.Join(dir, "tokens")) {
			t.Errorf("stdout %q: want where the tokens are", stdout)
		}
		sock := filepath.Join(dir, AdminSocket)
		if !strings.Contains(stdout, "admin socket "+sock+": ") {
			t.Errorf("stdout %q: want where the admin socket is", stdout)
		}
		if _, err := os.Lstat(sock); !os.IsNotExist(err) {
			t.Errorf("the admin socket outlives the server: %v", err)
		}
		for _, want := range []*regexp.Regexp{
			regexp.MustCompile(`msg=call tool=memory_store client=claude-code via=rest code=OK ms=\d`),
			regexp.MustCompile(`msg=call tool=memory_store client=- via=rest code=UNAUTHENTICATED ms=\d`),
			regexp.MustCompile(`msg=call tool=memory_whoami client=hearth:local-admin via=rest code=OK ms=\d`),
			regexp.MustCompile(`msg="shutting down`),
			regexp.MustCompile(`msg=stopped ms=\d`),
		} {
			if !want.MatchString(stderr) {
				t.Errorf("log lacks %v:\n%s", want, stderr)
			}
		}
		for _, leak := range []string{secret, token, "hearth_wrong"} {
			if strings.Contains(stderr, leak) || strings.Contains(stdout, leak) {
				t.Errorf("output carries %q", leak)
			}
		}
	})
	t.Run("OKNoTokens", func(t *testing.T) {
		dir := t.TempDir()
		opts := `{"clients":[{"name":"lan","scopes":["read"],"ip":"127.0.0.9"}]}`
		if err := os.WriteFile(filepath.Join(dir, "options.json"), []byte(opts), 0o600); err != nil {
			t.Fatal(err)
		}
		stdout, _ := serveFor(t, dir, func(string) {})
		if strings.Contains(stdout, "client tokens") {
			t.Errorf("stdout %q mentions tokens, though no client has a generated one", stdout)
		}
	})
}
