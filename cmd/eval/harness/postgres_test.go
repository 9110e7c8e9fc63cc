package harness

import (
	"context"
	"database/sql"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"

	"github.com/hearth-memory/hearth/storage/storagetest"
)

var (
	pgBuildOnce sync.Once
	pgHearthBin string
	pgBuildErr  error
	pgBuildDir  string
)

// hearthPostgres builds cmd/hearth with the postgres tag (the driver
// linked, docs/postgres.md) once per test run.
func hearthPostgres(t *testing.T) string {
	t.Helper()
	pgBuildOnce.Do(func() {
		if pgBuildDir, pgBuildErr = os.MkdirTemp("", "hearth-eval-pg-test-"); pgBuildErr != nil {
			return
		}
		pgHearthBin = filepath.Join(pgBuildDir, "hearth")
		cmd := exec.Command("go", "build", "-tags", "postgres", "-o", pgHearthBin, "github.com/hearth-memory/hearth/cmd/hearth")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			pgBuildErr = &buildError{err: err, out: string(out)}
		}
	})
	if pgBuildErr != nil {
		t.Fatalf("build hearth -tags postgres: %v", pgBuildErr)
	}
	return pgHearthBin
}

// With Config.Database the daemon stores in the PostgreSQL database it is
// given, and full text ranks the known set there as on SQLite
// (TestRun_Known); the report names the backend.
func TestRun_Postgres(t *testing.T) {
	t.Parallel()
	url := storagetest.URL(t)
	dropped := false
	cfg := Config{Set: knownSet(), Modes: []string{ModeFTS}, Hearth: hearthPostgres(t), WorkDir: t.TempDir(),
		Database: func(context.Context) (string, func() error, error) {
			return url, func() error { dropped = true; return nil }, nil
		}}
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if rep.Backend != "postgres" || !dropped {
		t.Errorf("backend %q, database dropped %v; want postgres, true", rep.Backend, dropped)
	}
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM records`).Scan(&n); err != nil || n != len(cfg.Set.Records) {
		t.Fatalf("records in the PostgreSQL database: %d (%v), want %d", n, err, len(cfg.Set.Records))
	}
	fts, ok := rep.Mode(ModeFTS)
	if !ok || !fts.Ran {
		t.Fatalf("fts mode = %+v, want it run", fts)
	}
	checkRows(t, fts.Rows, []Row{
		{Kind: AllKinds, Queries: 5, Recall5: 0.7, Recall10: 0.7, MRR: 0.7, Wins: -1, Losses: -1},
		{Kind: KindKeywords, Queries: 2, Recall5: 1, Recall10: 1, MRR: 0.75, Wins: -1, Losses: -1},
		{Kind: KindParaphrase, Queries: 1, Recall5: 0, Recall10: 0, MRR: 0, Wins: -1, Losses: -1},
		{Kind: KindMulti, Queries: 2, Recall5: 0.75, Recall10: 0.75, MRR: 1, Wins: -1, Losses: -1},
	})
}
