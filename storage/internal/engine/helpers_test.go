package engine

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/ext/fts5"

	"github.com/hearth-memory/hearth/storage/fulltext"
)

// testFuncs registers what the migrations call, as storage does: the
// hearth_cjk tokenizer (the real one), and hearth_rank, hearth_has_cjk
// and hearth_session_digest in forms that only need to exist: the
// engine's tests store no records, so none of them runs.
func testFuncs(c *sqlite3.Conn) error {
	if err := fts5.RegisterCustom(c, func(api *fts5.API) error {
		if err := api.CreateTokenizer("hearth_cjk", func([]string) (fts5.Tokenizer, error) { return fulltext.CJKTokenizer{}, nil }); err != nil {
			return err
		}
		return api.CreateFunction("hearth_rank", func(fts5.Context, sqlite3.Context, ...sqlite3.Value) {})
	}); err != nil {
		return err
	}
	if err := c.CreateFunction("hearth_has_cjk", 2, sqlite3.DETERMINISTIC|sqlite3.INNOCUOUS, func(ctx sqlite3.Context, arg ...sqlite3.Value) {
		ctx.ResultBool(fulltext.HasCJK(arg[0].Text()) || fulltext.HasCJK(arg[1].Text()))
	}); err != nil {
		return err
	}
	return c.CreateFunction("hearth_session_digest", 2, sqlite3.DETERMINISTIC, func(ctx sqlite3.Context, arg ...sqlite3.Value) {
		ctx.ResultText("h1:" + arg[1].Text())
	})
}

// testConfig is the Config of an engine over path with testFuncs.
func testConfig(path string) Config {
	return Config{Path: path, Now: time.Now, Funcs: testFuncs}
}

// openTestDB opens an engine over a new file in a temporary directory,
// closed with the test.
func openTestDB(t *testing.T) *Engine {
	t.Helper()
	db, err := Open(context.Background(), testConfig(filepath.Join(t.TempDir(), "hearth.db")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// ExecRaw runs query on the writer's pool, outside the writer loop.
func (e *Engine) ExecRaw(ctx context.Context, query string, args ...any) error {
	_, err := e.writer.ExecContext(ctx, query, args...)
	return err
}
