package fts

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/storage/fulltext"
)

// BenchmarkPGWords ranks word searches over HEARTH_BENCH_RECORDS records
// (default 10,000) made on the server: titles of 6 words and contents of
// 40 to 99 drawn, skewed, from 60 common words and 20,000 rare ones, as
// storage's BenchmarkSearch makes them. It reports the p50 and p95 of a
// search besides the mean.
func BenchmarkPGWords(b *testing.B) {
	n := 10_000
	if v := os.Getenv("HEARTH_BENCH_RECORDS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n <= 0 {
			b.Fatalf("HEARTH_BENCH_RECORDS=%q: want a positive integer", v)
		}
	}
	ctx := context.Background()
	q := pgStore(b)
	vocab := strings.Fields(`service configure database deploy build test cache index
		billing invoice user request error retry timeout queue worker job schema migration
		table column query api client server ticket config file path host port log metric
		release version branch commit review module package function method type field value
		record memory search rank budget session anchor evidence namespace topic store update`)
	syll := []string{"zy", "xtra", "quel", "por", "ban", "tik", "mor", "ven", "dal", "shu"}
	for i := range 20000 {
		vocab = append(vocab, syll[i%10]+syll[(i/10)%10]+fmt.Sprintf("%04d", i))
	}
	vj, _ := json.Marshal(vocab)
	start := time.Now()
	// power(random(), 4) skews the draw to the first, common, words.
	if _, err := q.db.ExecContext(ctx, `
		WITH v AS (SELECT array_agg(w ORDER BY i) AS w, count(*) AS n FROM jsonb_array_elements_text($1::jsonb) WITH ORDINALITY AS x (w, i))
		INSERT INTO records (id, namespace, type, title, content, status, revision, writer,
			confidence, effective_confidence, source, created_at, updated_at)
		SELECT lpad(g::text, 26, '0'), CASE WHEN g % 2 = 0 THEN 'global' ELSE 'github/acme/api' END, 'note',
			(SELECT string_agg(v.w[1 + floor(power(random(), 4) * v.n)::int + 0 * k], ' ') FROM generate_series(1, 6 + 0 * g) AS s (k)),
			(SELECT string_agg(v.w[1 + floor(power(random(), 4) * v.n)::int + 0 * k], ' ') FROM generate_series(1, 40 + (g * 7919) % 60) AS s (k)),
			'active', 1, 'bench', 0.8, 0.8, 'store', 1000, 1000
		FROM v, generate_series(1, $2) AS g`, string(vj), n); err != nil {
		b.Fatal(err)
	}
	if _, err := q.db.ExecContext(ctx, `ANALYZE records`); err != nil {
		b.Fatal(err)
	}
	b.Logf("%d records made in %v", n, time.Since(start).Round(time.Millisecond))
	for _, tt := range []struct{ name, text string }{
		{"common", "how do we configure the service?"},
		{"mixed", "which database do we use for billing invoices?"},
		{"rare", "zyxtra0042 quelpor0913"},
		{"miss", "zzqx4711"},
	} {
		b.Run(fmt.Sprintf("%s/n=%d", tt.name, n), func(b *testing.B) {
			x, _ := newPG()
			ex := fulltext.Expand(fulltext.QueryWords(tt.text))
			f := Filter{Namespaces: []string{"global", "github/acme/api"}}
			var took []time.Duration
			for b.Loop() {
				t0 := time.Now()
				if _, err := x.Words(ctx, q, ex, f, 20); err != nil {
					b.Fatal(err)
				}
				took = append(took, time.Since(t0))
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(took[len(took)*95/100].Microseconds())/1000, "p95-ms")
		})
	}
}
