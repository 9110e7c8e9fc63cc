package server_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/server"
	"github.com/hearth-memory/hearth/server/options"
	"github.com/hearth-memory/hearth/server/servertest"
	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

// wantToken checks over REST, MCP and gRPC, through the real interceptor,
// that front end s refuses old with UNAUTHENTICATED and takes fresh as
// codex's.
func wantToken(t *testing.T, s *servertest.Server, old, fresh string) {
	t.Helper()
	for _, tr := range s.Transports() {
		if r := tr.Call(t, old, "memory_whoami", map[string]any{}); r.OK || r.Code != "UNAUTHENTICATED" || r.HTTP != 401 {
			t.Errorf("%s: the old token: %v, want UNAUTHENTICATED 401", tr.Name(), r)
		}
		if r := tr.Call(t, fresh, "memory_whoami", map[string]any{}); !r.OK || servertest.Str(r.Body, "client") != "codex" {
			t.Errorf("%s: the new token: %v, want codex", tr.Name(), r)
		}
	}
}

// readToken returns the token in the token file of client name in s's
// data directory.
func readToken(t *testing.T, s *servertest.Server, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.Dir, "tokens", name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// copyTokens copies the token files of from's data directory to a new
// data directory, as an admin sets up a second front end, and returns it.
func copyTokens(t *testing.T, from *servertest.Server) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(filepath.Join(dir, "tokens"), os.DirFS(filepath.Join(from.Dir, "tokens"))); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestToken_RotationSeenByEveryFrontEnd holds issue #46's "token rotation
// seen by every front end at once": two front ends on one PostgreSQL
// database, each with its own data directory holding a copy of the token
// files. codex's token rotated through A (memory_token_rotate over REST)
// is refused by B, and the new one taken, on the next call over every
// transport. Restarted, B does not let its now stale token file undo the
// rotation: the file is removed with an audit row naming the client, and
// the rotation holds on both (docs/operations.md, "Tokens").
func TestToken_RotationSeenByEveryFrontEnd(t *testing.T) {
	t.Parallel()
	url := storagetest.URL(t)
	opts := servertest.ParityOptions()
	a := servertest.StartOn(t, storagetest.OpenURL(t, url), t.TempDir(), opts)
	dirB := copyTokens(t, a)
	b := servertest.StartOn(t, storagetest.OpenURL(t, url), dirB, opts)
	old, admin := a.Tokens["codex"], a.Tokens["claude-code"]
	if r := b.REST.Call(t, old, "memory_whoami", map[string]any{}); !r.OK {
		t.Fatalf("B before the rotation: %v", r)
	}

	r := a.REST.Call(t, admin, "memory_token_rotate", map[string]any{"client": "codex"})
	servertest.Must(t, "rotate through A", r)
	fresh := readToken(t, a, "codex")
	if fresh == old {
		t.Fatal("the rotation kept the token")
	}
	wantToken(t, b, old, fresh)
	wantToken(t, a, old, fresh)

	b.Stop()
	b2 := servertest.StartOn(t, storagetest.OpenURL(t, url), dirB, opts)
	if _, err := os.Stat(filepath.Join(dirB, "tokens", "codex")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("B's stale token file after its restart: %v, want it removed", err)
	}
	if got := readToken(t, b2, "claude-code"); got != admin {
		t.Errorf("B's token file of claude-code, which no rotation touched, changed")
	}
	wantToken(t, b2, old, fresh)
	wantToken(t, a, old, fresh)
	sum := sha256.Sum256([]byte(fresh))
	if hash, ok, err := b2.DB.ClientTokenHash(t.Context(), "codex"); err != nil || !ok || hash != hex.EncodeToString(sum[:]) {
		t.Errorf("the stored digest after B's restart: %v %v, want the rotated token's", ok, err)
	}
	var rows []storage.AuditEntry
	for _, e := range servertest.AuditEntries(t, b2.DB, storage.ActionTokenRotate) {
		if e.Client == storage.SystemClient {
			rows = append(rows, e)
		}
	}
	if len(rows) != 1 || !strings.HasPrefix(rows[0].Detail.String(), "client codex: the token file was older") {
		t.Errorf("audit rows of the stale file: %+v, want one naming codex", rows)
	}
	for _, e := range rows {
		if strings.Contains(e.Detail.String(), old) || strings.Contains(e.Detail.String(), fresh) {
			t.Errorf("an audit row carries a token")
		}
	}
}

// TestToken_RotationInTheDatabaseSeenAtOnce holds the same on one front
// end, on the backend the tests run on (SQLite by default): a rotation
// committed on the store by the CLI's own path (server.RotateGeneratedToken,
// what `hearth token rotate` runs where it opens the store) rather than
// by the server's RPC counts from the next call, and holds after a
// restart, where the token file, written by the rotation, agrees.
func TestToken_RotationInTheDatabaseSeenAtOnce(t *testing.T) {
	t.Parallel()
	opts := servertest.ParityOptions()
	a := servertest.Start(t, opts)
	old := a.Tokens["codex"]
	if r := a.GRPC.Call(t, old, "memory_whoami", map[string]any{}); !r.OK {
		t.Fatalf("before the rotation: %v", r)
	}
	if _, _, err := server.RotateGeneratedToken(t.Context(), a.DB, opts.Clients, filepath.Join(a.Dir, "tokens"), "codex", storage.SystemClient); err != nil {
		t.Fatal(err)
	}
	fresh := readToken(t, a, "codex")
	wantToken(t, a, old, fresh)

	a.Stop()
	again := servertest.StartOn(t, a.DB, a.Dir, opts)
	wantToken(t, again, old, fresh)
}

// TestToken_NewerFileDecidesOnPostgres: on PostgreSQL a token file
// written after the stored digest (a database restored from a dump older
// than the file's rotation) still decides at start, as on SQLite: its
// token is taken and stored, the older one refused.
func TestToken_NewerFileDecidesOnPostgres(t *testing.T) {
	t.Parallel()
	url := storagetest.URL(t)
	db := storagetest.OpenURL(t, url)
	// The front end's clock runs an hour behind, so that the digest it
	// stores is, as the restored dump's is, clearly older than the file
	// written after it (a file's time can lag the clock by a few ms).
	db.Now = func() time.Time { return time.Now().Add(-time.Hour) }
	opts := servertest.ParityOptions()
	restored := strings.Repeat("ab", 32) // the dump's digest, of a token nobody holds
	if err := db.StoreClientToken(t.Context(), "codex", restored, storage.ActionTokenRotate, "", ""); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file, err := server.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "tokens"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tokens", "codex"), []byte(file+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := servertest.StartOn(t, db, dir, opts)
	if r := s.REST.Call(t, file, "memory_whoami", map[string]any{}); !r.OK || servertest.Str(r.Body, "client") != "codex" {
		t.Errorf("the newer file's token: %v, want codex", r)
	}
	sum := sha256.Sum256([]byte(file))
	if hash, _, _ := db.ClientTokenHash(t.Context(), "codex"); hash != hex.EncodeToString(sum[:]) {
		t.Errorf("stored digest %s…, want the file's", hash[:8])
	}
	if _, err := os.Stat(filepath.Join(dir, "tokens", "codex")); err != nil {
		t.Errorf("the newer file: %v, want it kept", err)
	}
}

// TestToken_FrontEndsStartingTogether: two front ends starting at once on
// an empty PostgreSQL database, each with an empty data directory, do
// not each keep a token of their own for a client: one generates and
// stores it, and the other, finding it stored, keeps no file, so no
// token file anywhere is refused. Many clients, provisioned side by side,
// make the two meet on some.
func TestToken_FrontEndsStartingTogether(t *testing.T) {
	t.Parallel()
	url := storagetest.URL(t)
	var clients []options.Client
	for i := range 24 {
		clients = append(clients, options.Client{Name: fmt.Sprint("agent-", i), Scopes: []options.Scope{options.ScopeRead}})
	}
	dbs := []*storage.DB{storagetest.OpenURL(t, url), storagetest.OpenURL(t, url)}
	dirs := []string{t.TempDir(), t.TempDir()}
	errs := make([]error, len(dbs))
	var wg sync.WaitGroup
	for i := range dbs {
		wg.Go(func() { _, errs[i] = server.ProvisionTokens(t.Context(), dbs[i], clients, dirs[i]) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	stored, err := dbs[0].ClientTokens(t.Context())
	if err != nil || len(stored) != len(clients) {
		t.Fatalf("stored tokens: %d, %v; want %d", len(stored), err, len(clients))
	}
	for _, s := range stored {
		var files []string
		for _, dir := range dirs {
			b, err := os.ReadFile(filepath.Join(dir, s.Client))
			if err != nil {
				continue
			}
			sum := sha256.Sum256([]byte(strings.TrimSpace(string(b))))
			if hex.EncodeToString(sum[:]) != s.SHA256 {
				t.Errorf("%s: the file in %s holds a token the database does not", s.Client, dir)
			}
			files = append(files, dir)
		}
		if len(files) != 1 {
			t.Errorf("%s: token files in %d data directories, want the one whose front end stored it", s.Client, len(files))
		}
	}
}
