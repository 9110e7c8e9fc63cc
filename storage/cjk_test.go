package storage

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkHasCJK_English is what the CJK side index costs a store of
// English-only text since migration 0081: the check of its title and
// content, in SQL as the insert trigger calls it, against the same
// statement without the call.
func BenchmarkHasCJK_English(b *testing.B) {
	db, err := Open(context.Background(), filepath.Join(b.TempDir(), "hearth.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	title := "Webhook retries are capped at three attempts"
	content := strings.Repeat("Deliveries retry with exponential backoff, then the job fails and alerts. ", 9)
	for _, q := range []struct{ name, sql string }{
		{"check", `SELECT hearth_has_cjk(?1, ?2)`},
		{"none", `SELECT length(?1) + length(?2)`},
	} {
		b.Run(q.name, func(b *testing.B) {
			for b.Loop() {
				var v int
				if err := db.lite.Reader().QueryRowContext(context.Background(), q.sql, title, content).Scan(&v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
