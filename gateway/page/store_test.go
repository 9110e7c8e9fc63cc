package page

import (
	"strings"
	"testing"
	"time"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"google.golang.org/protobuf/types/known/timestamppb"
)

func u32(n uint32) *uint32 { return &n }

func TestHandler_Store(t *testing.T) {
	t.Parallel()
	t.Run("OK", func(t *testing.T) {
		a := baseAnswers()
		a.status.Store = &hearthv1.StoreHealth{State: "ok", Path: "/data/hearth.db", FreeMib: u32(20480), TotalMib: u32(30720),
			CheckedAt: timestamppb.New(testNow.Add(-time.Hour)), Check: "quick_check ok, full-text index ok (0.4 s)",
			WalKib: 4096, Checkpoints: 3, CheckpointMaxMs: 41}
		r, _ := render(t, a, Config{})
		wantContains(t, r.html, `<section id="store" class="" data-state="ok">`, `id="store-state">writable`,
			`id="store-backend">SQLite`, "<code>/data/hearth.db</code>", `id="store-free">20.0 GiB free of 30.0 GiB`,
			`id="store-check">2026-11-30 13:20 UTC: quick_check ok, full-text index ok (0.4 s)`,
			"4 MiB; 3 checkpoints truncated it since start (longest 41 ms)")
		checkSelfContained(t, r.html)
	})
	t.Run("DiskFull", func(t *testing.T) {
		a := baseAnswers()
		a.status.Store = &hearthv1.StoreHealth{State: "disk_full", Path: "/data/hearth.db", FreeMib: u32(0), TotalMib: u32(6),
			Problems:      []string{"the disk holding the database is full (12.0 KiB free): writes are refused since 2026-11-30T14:00:00Z and resume once space is freed; reads work"},
			DiskFullSince: timestamppb.New(testNow.Add(-20 * time.Minute)), WritesRefused: 360}
		a.status.Store.WalKib = 700
		r, _ := render(t, a, Config{})
		wantContains(t, r.html, "700 KiB; 0 checkpoints truncated it since start", `<section id="store" class="alert" data-state="disk_full">`, `id="store-state">disk full: writes refused`,
			`<p class="err">the disk holding the database is full (12.0 KiB free)`, `id="store-free">0 MiB free of 6 MiB`,
			`id="store-refused">360 writes refused since 2026-11-30 14:00 UTC`, `id="store-check">not yet`)
		checkSelfContained(t, r.html)
	})
	t.Run("ReadOnly", func(t *testing.T) {
		a := baseAnswers()
		a.status.Store = &hearthv1.StoreHealth{State: "read_only", Path: "/data/hearth.db",
			Problems:      []string{"the database file /data/hearth.db is damaged (tables records): Hearth serves reads and refuses writes until it is restored; stop Hearth and restore the latest good backup with `hearth restore --data DIR FILE`"},
			DamagedTables: []string{"records"}, Damage: []string{"Tree 4 page 198: btreeInitPage() returns error code 11", "<script>"}}
		r, _ := render(t, a, Config{})
		wantContains(t, r.html, `data-state="read_only"`, `id="store-state">damaged: read-only`, "hearth restore --data DIR FILE",
			`<div class="small">Tree 4 page 198: btreeInitPage() returns error code 11</div>`, "&lt;script&gt;", `id="store-free">unknown`)
		checkSelfContained(t, r.html)
	})
	t.Run("OKPostgres", func(t *testing.T) {
		a := baseAnswers()
		a.status.Store = &hearthv1.StoreHealth{State: "ok"}
		r, _ := render(t, a, Config{Database: "postgres://hearth:xxxxx@db.lan/hearth"})
		wantContains(t, r.html, `data-state="ok"`, `id="store-state">writable`, `id="store-backend">PostgreSQL`,
			"<code>postgres://hearth:xxxxx@db.lan/hearth</code>")
		for _, sqlite := range []string{"<dt>file</dt>", `id="store-free"`, `id="store-check"`, "write-ahead log"} {
			if strings.Contains(r.html, sqlite) {
				t.Errorf("the page shows SQLite's %s for a PostgreSQL store", sqlite)
			}
		}
		checkSelfContained(t, r.html)
	})
	t.Run("Absent", func(t *testing.T) {
		r, _ := render(t, baseAnswers(), Config{})
		if r.code != 200 {
			t.Fatalf("status %d", r.code)
		}
		if strings.Contains(r.html, `id="store"`) {
			t.Error("a store section without a store field")
		}
	})
}
