package screen

import (
	"fmt"
	"slices"
	"strings"
	"testing"
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

// BenchmarkCheck_Hostile screens hostile inputs — each unit repeated to 128
// KiB and to 1 MiB — and reports the throughput of each size, so that a
// scan that is not linear shows as a rate that falls with size. (A timed
// assertion in a test would fail on a loaded machine, not on a quadratic
// scan alone: this is measured, not asserted.)
func BenchmarkCheck_Hostile(b *testing.B) {
	prepare() // hints.words is built on first use
	units := append(slices.Clone(hostile), strings.Join(hints.words, " ")+" ")
	for i, unit := range units {
		for _, size := range []int{128 << 10, 1 << 20} {
			s := strings.Repeat(unit, size/len(unit))
			b.Run(fmt.Sprintf("unit=%d/KiB=%d", i, size>>10), func(b *testing.B) {
				b.SetBytes(int64(len(s)))
				for b.Loop() {
					Check("content", s)
				}
			})
		}
	}
}
