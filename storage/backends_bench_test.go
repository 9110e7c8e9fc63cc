package storage_test

import (
	"context"
	"database/sql"
	"fmt"
	neturl "net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

// BenchmarkBackends gives the figures docs/measurements.md compares the
// backends by, SQLite and PostgreSQL in one run: each store filled with
// HEARTH_BENCH_RECORDS generated records (default 10,000) as BenchmarkSearch
// fills one (fill: StoreMany in transactions of 5,000; with
// HEARTH_BENCH_CACHE the SQLite file is cached as benchDB caches it, and
// with HEARTH_BENCH_POSTGRES the PostgreSQL database: benchPostgres), and 1
// in 100 more records of CJK text; then, per backend:
//
//   - search/<kind>: Search over the store, as BenchmarkSearch asks it, for
//     common, mixed, rare and absent words and a CJK question, each
//     reporting the p50 and p95 of a search;
//   - store/clients=<k>: the real Store path, HEARTH_BENCH_STORES stores
//     (default 1,000) per iteration from k goroutines into the filled store,
//     reporting the rate;
//   - on PostgreSQL, store/fronts=2: the same stores through two front ends
//     on the filled database at once, 4 goroutines each
//     (BenchmarkPostgres_FrontEnds's storeFronts), with the writes run again.
//
// Without a PostgreSQL (pgtest) the PostgreSQL half skips.
func BenchmarkBackends(b *testing.B) {
	n := benchRecords(b)
	stores := 1000
	if v := os.Getenv("HEARTH_BENCH_STORES"); v != "" {
		var err error
		if stores, err = strconv.Atoi(v); err != nil || stores <= 0 {
			b.Fatalf("HEARTH_BENCH_STORES=%q: want a positive integer", v)
		}
	}
	for _, backend := range []string{storage.BackendSQLite, storage.BackendPostgres} {
		b.Run(backend, func(b *testing.B) {
			var (
				url   string
				db    *storage.DB
				start = time.Now()
			)
			if backend == storage.BackendPostgres {
				url = benchPostgres(b, n)
				db = storagetest.OpenURL(b, url)
			} else {
				db = benchStore(b, n, func(tb testing.TB) *storage.DB {
					return storagetest.OpenPath(tb, filepath.Join(tb.TempDir(), "hearth.db"))
				})
			}
			fillCJK(b, db, n/100)
			if url != "" {
				// The statistics of a copy made before fillCJK say no
				// record holds CJK text.
				analyze(b, url)
			}
			b.Logf("%s: %d records (and %d of CJK text) made in %v", backend, n, n/100, time.Since(start).Round(time.Millisecond))
			for _, q := range backendQueries {
				b.Run("search/"+q.name, func(b *testing.B) {
					sq := storage.SearchQuery{Text: q.text, Namespaces: []string{"global", "github/acme/api"}, Limit: 10}
					var took []time.Duration
					for b.Loop() {
						t0 := time.Now()
						if _, err := db.Search(ctx, sq); err != nil {
							b.Fatal(err)
						}
						took = append(took, time.Since(t0))
					}
					reportQuantiles(b, took)
				})
			}
			recs := loadRecords(b)
			for _, k := range []int{1, 8} {
				b.Run(fmt.Sprintf("store/clients=%d", k), func(b *testing.B) {
					for b.Loop() {
						storeAll(b, db, recs, stores, k)
					}
					b.ReportMetric(float64(stores*b.N)/b.Elapsed().Seconds(), "records/s")
				})
			}
			if backend != storage.BackendPostgres {
				return
			}
			b.Run("store/fronts=2", func(b *testing.B) {
				fronts := []*storage.DB{db, storagetest.OpenURL(b, url)}
				var retries int64
				for b.Loop() {
					retries += storeFronts(b, fronts, recs, stores, 8)
				}
				b.ReportMetric(float64(stores*b.N)/b.Elapsed().Seconds(), "records/s")
				b.ReportMetric(float64(retries)/float64(stores*b.N), "retries/op")
			})
		})
	}
}

// backendQueries are BenchmarkBackends's searches: BenchmarkSearch's
// words, and a CJK question whose bigrams fillCJK's records hold.
var backendQueries = []struct{ name, text string }{
	{"common", "how do we configure the service?"},
	{"mixed", "which database do we use for billing invoices?"},
	{"rare", "zyxtra0042 quelpor0913"},
	{"miss", "zzqx4711"},
	{"cjk", "数据库迁移怎么做"},
}

// cjkWords are the words of fillCJK's records: gen's common words, in
// Chinese.
var cjkWords = strings.Fields(`服务 配置 数据库 部署 构建 测试 缓存 索引 账单 发票 用户 请求 错误
	重试 超时 队列 任务 迁移 表格 查询 客户端 服务器 文件 路径 主机 端口 日志 指标 版本 分支
	提交 审查 模块 函数 方法 类型 字段 记录 内存 搜索 排名 预算 会话 证据 主题 存储 更新`)

// fillCJK stores n records of CJK text (titles of 2 words, contents of 10
// to 29, no spaces, drawn from cjkWords by gen's skewed draw) in one batch.
func fillCJK(tb testing.TB, db *storage.DB, n int) {
	tb.Helper()
	if n == 0 {
		return
	}
	g := newGen(7)
	draw := func(k int) string {
		var s strings.Builder
		for range k {
			s.WriteString(cjkWords[g.zipf.Uint64()%uint64(len(cjkWords))])
		}
		return s.String()
	}
	recs := make([]storage.NewRecord, n)
	for i := range recs {
		recs[i] = g.record(tb)
		recs[i].Title = storagetest.Text(tb, draw(2))
		recs[i].Content = storagetest.Text(tb, draw(10+g.r.IntN(20))+"。")
	}
	if err := db.StoreMany(ctx, recs); err != nil {
		tb.Fatal(err)
	}
}

// reportQuantiles reports the p50 and p95 of took, in milliseconds.
func reportQuantiles(b *testing.B, took []time.Duration) {
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(took[len(took)*95/100].Microseconds())/1000, "p95-ms")
}

// benchPostgres returns the URL of a new PostgreSQL database of n generated
// records (fill), dropped when b ends: a pgtest database filled by the
// run, or with HEARTH_BENCH_POSTGRES set to the URL of a server (a role
// that may create databases) a copy of its database hearth_bench_<n>,
// made and filled by the first run that needs it, since filling 100,000
// records through Store takes long. The copy is brought to this build's
// schema first (a changed fill needs the database dropped by hand).
func benchPostgres(b *testing.B, n int) string {
	b.Helper()
	server := os.Getenv("HEARTH_BENCH_POSTGRES")
	if server == "" {
		u := storagetest.URL(b)
		db := storagetest.OpenURL(b, u)
		fill(b, db, n)
		analyze(b, u)
		return u
	}
	base, err := neturl.Parse(server)
	if err != nil {
		b.Fatal("HEARTH_BENCH_POSTGRES: not a URL") // the URL may hold a password: not shown
	}
	at := func(name string) string {
		u := *base
		u.Path = "/" + name
		return u.String()
	}
	admin, err := sql.Open("pgx", server)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { admin.Close() })
	cached := fmt.Sprintf("hearth_bench_%d", n)
	var found bool
	if err := admin.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, cached).Scan(&found); err != nil {
		b.Fatal(err)
	}
	if !found {
		// Filled under another name, so that a run cut short leaves no
		// half-filled cache.
		filling := cached + "_filling"
		if _, err := admin.ExecContext(ctx, `DROP DATABASE IF EXISTS `+filling+` WITH (FORCE)`); err != nil {
			b.Fatal(err)
		}
		if _, err := admin.ExecContext(ctx, `CREATE DATABASE `+filling); err != nil {
			b.Fatal(err)
		}
		db, err := storage.OpenPostgres(ctx, at(filling))
		if err != nil {
			b.Fatal(err)
		}
		fill(b, db, n)
		if err := db.Close(); err != nil {
			b.Fatal(err)
		}
		if _, err := admin.ExecContext(ctx, `ALTER DATABASE `+filling+` RENAME TO `+cached); err != nil {
			b.Fatal(err)
		}
	} else {
		db, err := storage.OpenPostgres(ctx, at(cached)) // migrates it
		if err != nil {
			b.Fatal(err)
		}
		if err := db.Close(); err != nil {
			b.Fatal(err)
		}
	}
	analyze(b, at(cached))
	name := fmt.Sprintf("hearth_bench_run_%d", time.Now().UnixNano())
	if _, err := admin.ExecContext(ctx, `CREATE DATABASE `+name+` TEMPLATE `+cached); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if _, err := admin.ExecContext(context.Background(), `DROP DATABASE `+name+` WITH (FORCE)`); err != nil {
			b.Error(err)
		}
	})
	return at(name)
}

// analyze gathers the planner's statistics of the database at url, as a
// server's autovacuum does some time after a fill: a copy made before
// then would plan every search without them.
func analyze(b *testing.B, url string) {
	b.Helper()
	db, err := sql.Open("pgx", url)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `ANALYZE`); err != nil {
		b.Fatal(err)
	}
}
