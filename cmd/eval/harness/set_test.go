package harness

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ncruces/go-sqlite3/driver"
	"github.com/ncruces/go-sqlite3/ext/fts5"

	"github.com/hearth-memory/hearth/storage/fulltext"
)

// setDir is the committed eval set.
const setDir = "../testdata/set"

func loadCommitted(t *testing.T) *Set {
	t.Helper()
	s, err := LoadSet(setDir)
	if err != nil {
		t.Fatalf("LoadSet(%s): %v", setDir, err)
	}
	return s
}

// TestLoadSet_Committed holds the committed set to what issue 15 asks of
// it: at least 300 records and 120 queries, at least 30 of each kind,
// several repositories plus projects and global, and near-miss records.
func TestLoadSet_Committed(t *testing.T) {
	t.Parallel()
	s := loadCommitted(t)
	if n := len(s.Records); n < 300 {
		t.Errorf("%d records, want at least 300", n)
	}
	if n := len(s.Queries); n < 120 {
		t.Errorf("%d queries, want at least 120", n)
	}
	// The prompt hook's table needs prompts nothing answers (issue 40).
	if n := s.Count()[KindNone]; n < 60 {
		t.Errorf("%d %s queries, want at least 60", n, KindNone)
	}
	for _, k := range Kinds {
		if n := s.Count()[k]; n < 30 {
			t.Errorf("%d %s queries, want at least 30", n, k)
		}
	}
	prefixes := map[string]int{}
	namespaces := map[string]bool{}
	types := map[string]bool{}
	near := 0
	for _, r := range s.Records {
		kind, _, _ := strings.Cut(r.Namespace, "/")
		prefixes[kind]++
		namespaces[r.Namespace] = true
		types[r.Type] = true
		if len(r.NearMiss) > 0 {
			near++
		}
	}
	for _, p := range []string{"github", "gitea", "projects", "global"} {
		if prefixes[p] == 0 {
			t.Errorf("no record in a %s namespace", p)
		}
	}
	if len(namespaces) < 8 {
		t.Errorf("%d namespaces, want at least 8", len(namespaces))
	}
	for _, ty := range []string{"decision", "constraint", "requirement", "procedure", "preference", "note"} {
		if !types[ty] {
			t.Errorf("no record of type %s", ty)
		}
	}
	if near < 30 {
		t.Errorf("%d records are marked as near misses, want at least 30", near)
	}
	if s.Options == nil {
		t.Error("the committed set has no options.json (its projects need project_links)")
	}
}

func TestLoadSet(t *testing.T) {
	t.Parallel()
	rec := `{"key":"a","namespace":"global","type":"note","title":"T","content":"C"}`
	qry := `{"id":"q","namespace":"global","kind":"keywords","query":"T","answers":["a"]}`
	write := func(t *testing.T, files map[string]string) string {
		t.Helper()
		dir := t.TempDir()
		for name, body := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	t.Run("OK", func(t *testing.T) {
		dir := write(t, map[string]string{
			RecordsFile: "# a comment\n\n" + rec + "\n",
			QueriesFile: qry + "\n",
			OptionsFile: `{"hubs":[]}`,
		})
		s, err := LoadSet(dir)
		if err != nil {
			t.Fatalf("LoadSet: %v", err)
		}
		if len(s.Records) != 1 || len(s.Queries) != 1 || string(s.Options) != `{"hubs":[]}` {
			t.Errorf("LoadSet = %d records, %d queries, options %s; want 1, 1, {\"hubs\":[]}", len(s.Records), len(s.Queries), s.Options)
		}
	})
	t.Run("OKNoOptions", func(t *testing.T) {
		s, err := LoadSet(write(t, map[string]string{RecordsFile: rec, QueriesFile: qry}))
		if err != nil {
			t.Fatalf("LoadSet: %v", err)
		}
		if s.Options != nil {
			t.Errorf("Options = %s, want nil without options.json", s.Options)
		}
	})
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"ErrNoRecordsFile", map[string]string{QueriesFile: qry}, RecordsFile},
		{"ErrUnknownField", map[string]string{RecordsFile: `{"key":"a","nmespace":"global"}`, QueriesFile: qry}, `records.jsonl:1: json: unknown field "nmespace"`},
		{"ErrTwoValues", map[string]string{RecordsFile: rec + rec, QueriesFile: qry}, "records.jsonl:1: more than one JSON value"},
		{"ErrBadLine", map[string]string{RecordsFile: rec + "\n{", QueriesFile: qry}, "records.jsonl:2:"},
		{"ErrOptions", map[string]string{RecordsFile: rec, QueriesFile: qry, OptionsFile: `{`}, "options.json: not valid JSON"},
		{"ErrInvalid", map[string]string{RecordsFile: rec, QueriesFile: strings.Replace(qry, `"a"]`, `"b"]`, 1)}, `answer "b" names no record`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadSet(write(t, tc.files))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("LoadSet error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestSet_Validate(t *testing.T) {
	t.Parallel()
	valid := func() *Set {
		return &Set{
			Records: []Record{
				{Key: "a", Namespace: "global", Type: "note", Title: "A", Content: "a"},
				{Key: "b", Namespace: "global", Type: "note", Title: "B", Content: "b", NearMiss: []string{"a"}},
			},
			Queries: []Query{
				{ID: "q1", Namespace: "global", Kind: KindKeywords, Query: "a", Answers: []string{"a"}},
				{ID: "q2", Namespace: "global", Kind: KindMulti, Query: "a b", Answers: []string{"a", "b"}},
			},
		}
	}
	if err := valid().Validate(); err != nil {
		t.Fatalf("Validate() = %v on a valid set", err)
	}
	for _, tc := range []struct {
		name   string
		change func(*Set)
		want   string
	}{
		{"ErrNoRecords", func(s *Set) { s.Records = nil }, "records: none"},
		{"ErrNoQueries", func(s *Set) { s.Queries = nil }, "queries: none"},
		{"ErrNoKey", func(s *Set) { s.Records[0].Key = "" }, "records[0]: key is required"},
		{"ErrDuplicateKey", func(s *Set) { s.Records[1].Key = "a" }, `key "a" appears twice`},
		{"ErrNoNamespace", func(s *Set) { s.Records[0].Namespace = "" }, "namespace is required"},
		{"ErrNoType", func(s *Set) { s.Records[0].Type = "" }, "type is required"},
		{"ErrNoTitle", func(s *Set) { s.Records[0].Title = " " }, "title is required"},
		{"ErrNoContent", func(s *Set) { s.Records[0].Content = "" }, "content is required"},
		{"ErrNearMissUnknown", func(s *Set) { s.Records[1].NearMiss = []string{"zz"} }, `near_miss "zz" names no other record`},
		{"ErrNearMissSelf", func(s *Set) { s.Records[1].NearMiss = []string{"b"} }, `near_miss "b"`},
		{"ErrNoID", func(s *Set) { s.Queries[0].ID = "" }, "queries[0]: id is required"},
		{"ErrDuplicateID", func(s *Set) { s.Queries[1].ID = "q1" }, `id "q1" appears twice`},
		{"ErrQueryNamespace", func(s *Set) { s.Queries[0].Namespace = "" }, "(q1): namespace is required"},
		{"ErrNoQuery", func(s *Set) { s.Queries[0].Query = "" }, "(q1): query is required"},
		{"ErrKind", func(s *Set) { s.Queries[0].Kind = "fuzzy" }, `kind "fuzzy" is not one of keywords, paraphrase, multi`},
		{"ErrNoAnswers", func(s *Set) { s.Queries[0].Answers = nil }, "(q1): answers: none"},
		{"ErrMultiOne", func(s *Set) { s.Queries[1].Answers = []string{"a"} }, "(q2): a multi query needs at least 2 answers"},
		{"ErrUnknownAnswer", func(s *Set) { s.Queries[0].Answers = []string{"x"} }, `answer "x" names no record`},
		{"ErrAnswerTwice", func(s *Set) { s.Queries[1].Answers = []string{"a", "a"} }, `answer "a" appears twice`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := valid()
			tc.change(s)
			err := s.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate() = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestSet_Slice(t *testing.T) {
	t.Parallel()
	full := loadCommitted(t)
	t.Run("OK", func(t *testing.T) {
		s, err := full.Slice(40, 15)
		if err != nil {
			t.Fatalf("Slice: %v", err)
		}
		if len(s.Records) != 40 || len(s.Queries) != 15 {
			t.Fatalf("Slice(40, 15) = %d records, %d queries", len(s.Records), len(s.Queries))
		}
		keys := map[string]bool{}
		for _, r := range s.Records {
			keys[r.Key] = true
		}
		for _, q := range s.Queries {
			for _, a := range q.Answers {
				if !keys[a] {
					t.Errorf("query %s: answer %s is not in the slice", q.ID, a)
				}
			}
		}
		// Records keep their file order.
		var order []int
		for _, r := range s.Records {
			order = append(order, slices.IndexFunc(full.Records, func(x Record) bool { return x.Key == r.Key }))
		}
		if !slices.IsSorted(order) {
			t.Errorf("slice records are out of file order: %v", order)
		}
		again, _ := full.Slice(40, 15)
		if again.Digest() != s.Digest() {
			t.Error("Slice is not deterministic")
		}
		if s.Digest() == full.Digest() {
			t.Error("the slice has the full set's digest")
		}
	})
	t.Run("OKTooFewRecordsForAQuery", func(t *testing.T) {
		s, err := full.Slice(1, 500)
		if err != nil {
			t.Fatalf("Slice: %v", err)
		}
		for _, q := range s.Queries {
			if len(q.Answers) != 1 || q.Answers[0] != s.Records[0].Key {
				t.Errorf("query %s with answers %v is in a one-record slice of %s", q.ID, q.Answers, s.Records[0].Key)
			}
		}
	})
	t.Run("ErrEmpty", func(t *testing.T) {
		if _, err := full.Slice(0, 10); err == nil {
			t.Error("Slice(0, 10) succeeded, want an error")
		}
	})
}

// TestSet_Kinds checks that each query is of the kind it claims, measured
// the way full-text search sees words: its own query words
// (fulltext.QueryWords: runs of letters and digits, lower case, stopwords
// dropped), compared after porter stemming.
// A keywords query shares at least 2 such words with its answer; a
// paraphrase query at most 2 with each answer.
func TestSet_Kinds(t *testing.T) {
	t.Parallel()
	s := loadCommitted(t)
	db, err := driver.Open("file:kinds?mode=memory", fts5.Register)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`CREATE VIRTUAL TABLE doc USING fts5(body, tokenize = 'porter unicode61')`); err != nil {
		t.Fatal(err)
	}
	byKey := map[string]Record{}
	for _, r := range s.Records {
		byKey[r.Key] = r
	}
	shared := func(query string, r Record) []string {
		t.Helper()
		if _, err := db.Exec(`DELETE FROM doc`); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(`INSERT INTO doc VALUES (?)`, r.Title+"\n"+r.Content); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, w := range fulltext.QueryWords(query) {
			var n int
			if err := db.QueryRow(`SELECT count(*) FROM doc WHERE doc MATCH ?`, `"`+w+`"`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n > 0 {
				out = append(out, w)
			}
		}
		return out
	}
	for _, q := range s.Queries {
		for _, a := range q.Answers {
			words := shared(q.Query, byKey[a])
			switch {
			case q.Kind == KindKeywords && len(words) < 2:
				t.Errorf("keywords query %s shares %d words %v with %s, want at least 2", q.ID, len(words), words, a)
			case q.Kind == KindParaphrase && len(words) > 2:
				t.Errorf("paraphrase query %s shares %d words %v with %s, want at most 2", q.ID, len(words), words, a)
			}
		}
	}
}

func TestSet_SliceKinds(t *testing.T) {
	t.Parallel()
	s, err := loadCommitted(t).Slice(40, 15)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range Kinds {
		if n := s.Count()[k]; n != 5 {
			t.Errorf("Slice(40, 15) has %d %s queries, want 5 (taken in turn)", n, k)
		}
	}
}
