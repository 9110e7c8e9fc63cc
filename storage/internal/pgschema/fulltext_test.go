package pgschema_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ncruces/go-sqlite3/ext/fts5"

	"github.com/hearth-memory/hearth/storage/fulltext"
	"github.com/hearth-memory/hearth/storage/internal/pgtest"
)

// A record row goes in and comes back as it was, and the full-text columns
// find it: by a word of another form (the stemmer's), by a word of its
// title ranked above one of its content, and by a CJK bigram inside a
// sentence without spaces; a record without CJK text has no CJK entry.
func TestFullText_RoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.Open(t)
	const ins = `INSERT INTO records (id, namespace, type, title, content, status, revision, writer,
		confidence, effective_confidence, topics, source, created_at, updated_at)
		VALUES ($1, $2, 'note', $3, $4, 'active', 1, 'test', 0.8, 0.8, '["deploy"]', 'store', 1000, 1000)`
	for _, r := range [][4]string{
		{"01A", "proj/a", "Deploying the gateway", "We deployed it on Tuesday with the new certificates."},
		{"01B", "proj/a", "会议记录", "我们在東京开会，讨论了数据库迁移。"},
		{"01C", "proj/b", "Certificates", "Renewal of the deployment's certificates is manual."},
	} {
		if _, err := db.ExecContext(ctx, ins, r[0], r[1], r[2], r[3]); err != nil {
			t.Fatal(err)
		}
	}
	var (
		id, ns, title, content, topics string
		conf                           float64
		created                        int64
	)
	if err := db.QueryRowContext(ctx, `SELECT id, namespace, title, content, topics, confidence, created_at
		FROM records WHERE id = '01B'`).Scan(&id, &ns, &title, &content, &topics, &conf, &created); err != nil {
		t.Fatal(err)
	}
	if id != "01B" || ns != "proj/a" || title != "会议记录" || content != "我们在東京开会，讨论了数据库迁移。" ||
		topics != `["deploy"]` || conf != 0.8 || created != 1000 {
		t.Errorf("read back %q %q %q %q %q %v %d", id, ns, title, content, topics, conf, created)
	}

	ids := func(q string, args ...any) []string {
		t.Helper()
		var out []string
		for _, r := range query(t, db, q, args...) {
			out = append(out, r[0])
		}
		return out
	}
	// "deploys" stems as "deploying", "deployed" and "deployment's" do.
	if got := ids(`SELECT id FROM records WHERE fts @@ to_tsquery('hearth', $1) ORDER BY id`, "deploys"); !slices.Equal(got, []string{"01A", "01C"}) {
		t.Errorf("stemmed search for deploys found %v, want 01A and 01C", got)
	}
	// Title words weigh more (A) than content words (B).
	if got := ids(`SELECT id FROM records WHERE fts @@ to_tsquery('hearth', $1)
		ORDER BY ts_rank(fts, to_tsquery('hearth', $1)) DESC, id`, "certificate"); !slices.Equal(got, []string{"01C", "01A"}) {
		t.Errorf("ranked search for certificate found %v, want the title match 01C first", got)
	}
	// A word is found inside a sentence written without spaces.
	for _, q := range []string{"東京", "迁移", "数据库"} {
		if got := ids(`SELECT id FROM records WHERE cjk @@ $1::tsquery`, tsquery(q)); !slices.Equal(got, []string{"01B"}) {
			t.Errorf("CJK search for %s (%s) found %v, want 01B", q, tsquery(q), got)
		}
	}
	if got := ids(`SELECT id FROM records WHERE cjk IS NULL ORDER BY id`); !slices.Equal(got, []string{"01A", "01C"}) {
		t.Errorf("records without a CJK entry: %v, want 01A and 01C", got)
	}
	// An edit re-indexes in the same statement.
	if _, err := db.ExecContext(ctx, `UPDATE records SET content = 'Nothing about shipping here.' WHERE id = '01A'`); err != nil {
		t.Fatal(err)
	}
	if got := ids(`SELECT id FROM records WHERE fts @@ to_tsquery('hearth', 'shipped') ORDER BY id`); !slices.Equal(got, []string{"01A"}) {
		t.Errorf("search for shipped after the edit found %v, want 01A", got)
	}
}

// tsquery is the CJK query for text as storage's CJKQuery builds it for
// FTS5 (each distinct bigram, ORed), in tsquery syntax.
func tsquery(text string) string {
	var terms []string
	for _, tok := range cjkTokens(text) {
		if utf8.RuneCountInString(tok.lexeme) == 2 || len(cjkTokens(text)) == 1 {
			terms = append(terms, "'"+tok.lexeme+"'")
		}
	}
	return strings.Join(slices.Compact(terms), " | ")
}

type cjkToken struct {
	lexeme string
	pos    int
}

// cjkTokens runs the hearth_cjk tokenizer, numbering positions as FTS5
// does: each token one on, a colocated one where the one before it is.
func cjkTokens(text string) []cjkToken {
	var out []cjkToken
	pos := 0
	err := fulltext.CJKTokenizer{}.Tokenize(fts5.TOKENIZE_DOCUMENT, text, "", func(flags fts5.TokenFlag, token string, _, _ int) error {
		if flags&fts5.TOKEN_COLOCATED == 0 {
			pos++
		}
		out = append(out, cjkToken{token, min(pos, 16383)})
		return nil
	})
	if err != nil {
		panic(err)
	}
	return out
}

// hearth_cjk_lexemes gives the tokens and positions of the hearth_cjk
// tokenizer (storage/fulltext), for the texts of FuzzCJK's seed corpus
// and a few more: the same index entry on both backends.
func TestCJKLexemes_SameAsTokenizer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.Open(t)
	texts := []string{"数据库迁移", "デプロイ手順 and docker", "캐시는 쓰기", "迁", "naïve — café → 🚀", "𠀀",
		"我们在東京开会，讨论了数据库迁移。", "a東b京c", "東京東京", "ﾃﾞﾌﾟﾛｲ", strings.Repeat("数据", 9000), ""}
	corpus, err := filepath.Glob("../../fulltext/testdata/fuzz/FuzzCJK/*")
	if err != nil || len(corpus) == 0 {
		t.Fatalf("FuzzCJK's corpus: %v, %d files", err, len(corpus))
	}
	entry := regexp.MustCompile(`(?m)^string\((".*")\)$`)
	for _, f := range corpus {
		buf, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range entry.FindAllStringSubmatch(string(buf), -1) {
			s, err := strconv.Unquote(m[1])
			// PostgreSQL's text holds valid UTF-8 without NUL only, as
			// the screen lets through (storage/screen).
			if err == nil && utf8.ValidString(s) && !strings.ContainsRune(s, 0) {
				texts = append(texts, s)
			}
		}
	}
	for _, text := range texts {
		want := tsvector(cjkTokens(text))
		var got, same string
		err := db.QueryRowContext(ctx, `SELECT coalesce(hearth_cjk_lexemes($1)::text, 'NULL'),
			CASE WHEN hearth_cjk_lexemes($1) IS NULL THEN ($2 = '')::text ELSE (hearth_cjk_lexemes($1) = $2::tsvector)::text END`,
			text, want).Scan(&got, &same)
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		if same != "true" {
			t.Errorf("hearth_cjk_lexemes(%.60q) = %.200s, want %.200s", text, got, want)
		}
	}
}

// tsvector writes tokens as a tsvector literal.
func tsvector(tokens []cjkToken) string {
	pos := map[string][]string{}
	var order []string
	for _, tok := range tokens {
		if pos[tok.lexeme] == nil {
			order = append(order, tok.lexeme)
		}
		pos[tok.lexeme] = append(pos[tok.lexeme], strconv.Itoa(tok.pos))
	}
	var b strings.Builder
	for i, lex := range order {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "'%s':%s", lex, strings.Join(slices.Compact(pos[lex]), ","))
	}
	return b.String()
}

// The character class the migration's hearth_cjk_lexemes matches is the one
// fulltext.IsCJK accepts, code point for code point. When Go's Unicode
// tables move, this fails with the class to write into a new migration.
func TestCJKClass(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteByte('[')
	esc := func(r rune) string {
		if r <= 0xFFFF {
			return fmt.Sprintf(`\u%04X`, r)
		}
		return fmt.Sprintf(`\U%08X`, r)
	}
	for r := rune(0); r <= utf8.MaxRune; r++ {
		if !fulltext.IsCJK(r) {
			continue
		}
		first := r
		for r < utf8.MaxRune && fulltext.IsCJK(r+1) {
			r++
		}
		b.WriteString(esc(first))
		if r != first {
			b.WriteString("-" + esc(r))
		}
	}
	b.WriteByte(']')
	want := b.String()
	buf, err := os.ReadFile("migrations/0001_init.sql")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`-- cjk-class\n\s*'\((\[[^\]]*\])\+\)'`).FindSubmatch(buf)
	if m == nil {
		t.Fatal("no class after -- cjk-class in 0001_init.sql")
	}
	if got := string(m[1]); got != want {
		t.Errorf("hearth_cjk_lexemes matches\n%s\nfulltext.IsCJK accepts\n%s", got, want)
	}
}

// records.fts_len (0003) is the length of fts in positions, kept through
// inserts and updates: a word repeated past the 256 positions PostgreSQL
// keeps of a lexeme counts 256, and a record without words has none.
// hearth_tsv_len, which the CJK ranking counts cjk's length with (0004),
// gives the same count.
func TestFullText_StoredLengths(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.Open(t)
	const ins = `INSERT INTO records (id, namespace, type, title, content, status, revision, writer,
		confidence, effective_confidence, source, created_at, updated_at)
		VALUES ($1, 'n', 'note', $2, $3, 'active', 1, 'test', 0.8, 0.8, 'store', 1000, 1000)`
	for _, r := range [][3]string{
		{"01A", "Deploying the gateway", "We deployed it on Tuesday; see api.stripe.com/v1."},
		{"01B", "会议记录", "我们在東京开会，讨论了数据库迁移。 Then the deploy."},
		{"01C", "echo", strings.Repeat("echo ", 300) + "done"},
		{"01D", "...", "!!!"},
	} {
		if _, err := db.ExecContext(ctx, ins, r[0], r[1], r[2]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.ExecContext(ctx, `UPDATE records SET content = 'one two three' WHERE id = '01A'`); err != nil {
		t.Fatal(err)
	}
	// The reference: the positions of each column, counted lexeme by lexeme.
	got := query(t, db, `SELECT id, coalesce(fts_len::text, 'NULL'), coalesce(hearth_tsv_len(cjk)::text, 'NULL'),
		coalesce((SELECT sum(cardinality(u.positions)) FROM unnest(fts) AS u)::text, 'NULL'),
		coalesce((SELECT sum(cardinality(u.positions)) FROM unnest(cjk) AS u)::text, 'NULL')
		FROM records ORDER BY id`)
	want := map[string][2]string{
		"01A": {"6", "NULL"},   // deploy gateway (the stopword dropped), one two three
		"01B": {"5", "35"},     // each CJK run a word, then deploy; 7 + 13 + 15 characters and bigrams
		"01C": {"257", "NULL"}, // echo 256 times, done
		"01D": {"NULL", "NULL"},
	}
	for _, r := range got {
		if r[1] != r[3] || r[2] != r[4] {
			t.Errorf("%s: lengths fts %s, cjk %s; counted %s, %s", r[0], r[1], r[2], r[3], r[4])
		}
		if w := want[r[0]]; r[1] != w[0] || r[2] != w[1] {
			t.Errorf("%s: lengths fts %s, cjk %s; want fts %s, cjk %s", r[0], r[1], r[2], w[0], w[1])
		}
	}
}
