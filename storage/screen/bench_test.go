package screen

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// note is a typical short record: developer prose with a little code.
const note = `Decided to keep the SQLite writer pool at one connection: with two, the
busy handler is skipped on a deferred->write upgrade and we saw "database is
locked" under the extraction job. Set busy_timeout first in the DSN, then
journal_mode(WAL). The token budget for bootstrap is 4000; max_tokens=1024
for answers. See https://github.com/hearth-memory/hearth/issues/12 and the
runbook at docs/ops.md#sqlite. Password policy: 12 characters.`

// record is a typical long record: notes, a Go snippet, config and shell.
const record = "## Session summary (2026-05-03)\n\n" + note + `

### Config that worked

` + "```yaml" + `
hearth:
  listen: 127.0.0.1:8080
  data_dir: /data/hearth
  anchor_sweep_hours: 24
  encoder:
    url: http://encoder.lan:11434/api/embeddings
    model: nomic-embed-text
    timeout: 30s
  auth:
    token_file: /data/tokens.json
    password: ${HEARTH_ADMIN_PASSWORD}
` + "```" + `

### Code

` + "```go" + `
func (s *Store) Put(ctx context.Context, r Record) error {
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelSerializable})
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback()
	token := req.Header.Get("Authorization")
	if err := putRecordTx(ctx, tx, r, s.Now()); err != nil {
		return err
	}
	return tx.Commit()
}
` + "```" + `

Shell: ` + "`go test -race -run=TestStore_Put ./storage/...`" + ` then
` + "`docker compose up -d && curl -sf http://localhost:8080/healthz`" + `.
Commit 3f2a9c1e7b5d4a6f8e0c2b4d6f8a0c2e4b6d8f0a; request id
550e8400-e29b-41d4-a716-446655440000; image sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855.
Next: ask-for-review on the task, then rotate the API key every 90 days.
`

func BenchmarkCheck(b *testing.B) {
	for _, bc := range []struct{ name, text string }{
		{"Note", note},
		{"Record", record},
		{"Record4KB", record + strings.Repeat(note+"\n", 4)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			if _, err := Check("content", bc.text); err != nil {
				b.Fatalf("benchmark text refused: %v", err)
			}
			b.SetBytes(int64(len(bc.text)))
			b.ReportAllocs()
			for b.Loop() {
				Check("content", bc.text)
			}
		})
	}
}

// hostile are units that, repeated, make the most work for the screen:
// dense candidates that are rejected one after another.
var hostile = []string{
	"sk-", "sk-your-", "ghp_", "eyJ", "eyJa.", "xoxb-", "AKIA", "A3T", "sk_live_",
	"a:", "a=", "-", "Api key: ", "password: Bearer ", `\"password\":`, "--password ",
	"https://a:", "do-not-", "-----BEGIN PRIVATE KEY-----\n",
	// Shapes beyond provider tokens, and upstream anchors.
	"s. ", "SK", "hvs.", "sk_test_", "mysql -p", "curl -u a:", "sshpass -p a ",
	"machine a login b password ", "a:1:b:c:", "the password is ", "use password ",
	"identified by ", "Password=x;", "x:y@tcp(", "</password>", "password: |\n",
}

// TestCheck_Hostile checks that the screen stays linear on 1 MiB (the
// request limit, R-Q2) of hostile input: scaling the input 8× may not
// scale the time by much more than 8× (quadratic would be 64×). Under the
// race detector, which only slows this single goroutine (about tenfold),
// it scales 16 KiB to 128 KiB instead, and ignores times under a second.
func TestCheck_Hostile(t *testing.T) {
	if testing.Short() {
		t.Skip("slow")
	}
	small, large, floor := 128<<10, 1<<20, 100*time.Millisecond
	if raceEnabled {
		small, large, floor = 16<<10, 128<<10, time.Second
	}
	fastest := func(s string) time.Duration {
		best := time.Duration(1 << 62)
		for range 3 {
			start := time.Now()
			Check("content", s)
			best = min(best, time.Since(start))
		}
		return best
	}
	// Every keyword at once: every upstream rule runs.
	units := append(slices.Clone(hostile), strings.Join(hints.words, " ")+" ")
	for _, unit := range units {
		// A loaded machine can stretch one run; a quadratic scan fails
		// every time.
		var ts, tl time.Duration
		for range 3 {
			ts = fastest(strings.Repeat(unit, small/len(unit)))
			tl = fastest(strings.Repeat(unit, large/len(unit)))
			if tl <= 32*ts || tl <= floor {
				break
			}
		}
		t.Logf("%-32.32q %4d KiB %8v, %4d KiB %8v", unit, small>>10, ts, large>>10, tl)
		if tl > 32*ts && tl > floor {
			t.Errorf("%.32q: got %v for %d KiB and %v for %d KiB, want linear", unit, tl, large>>10, ts, small>>10)
		}
	}
}
