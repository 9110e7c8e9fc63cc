package answers_test

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hearth-memory/hearth/server/answers"
	"github.com/hearth-memory/hearth/server/models"
	"github.com/hearth-memory/hearth/server/models/modeltest"
	"github.com/hearth-memory/hearth/server/options"
	"github.com/hearth-memory/hearth/server/scope"
	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

var ctx = context.Background()

const model = "qwen3.5:9b"

// fixture is a store with records in global and a question about them.
type fixture struct {
	db   *storage.DB
	recs []*storage.Record
	q    *storage.Question
}

func newFixture(t *testing.T, question string, records ...[2]string) fixture {
	t.Helper()
	db := storagetest.Open(t)
	f := fixture{db: db}
	for _, r := range records {
		f.recs = append(f.recs, storagetest.Store(t, db, storage.NewRecord{
			Title: storagetest.Text(t, r[0]), Content: storagetest.Text(t, r[1]),
		}))
	}
	q, err := db.DeclareQuestion(ctx, "global", storagetest.Text(t, question), "codex")
	if err != nil {
		t.Fatal(err)
	}
	f.q = q
	return f
}

func (f fixture) ids() []string {
	var out []string
	for _, r := range f.recs {
		out = append(out, r.ID)
	}
	return out
}

// modelServer is an Ollama test server whose chat replies come from reply.
func modelServer(t *testing.T, reply func(given []string) any) (*modeltest.Server, *models.Router) {
	t.Helper()
	srv := modeltest.New(t, modeltest.Ollama, modeltest.Model{Name: model})
	fence := regexp.MustCompile(`<<<DATA ([0-9A-Z]{26})>>>`)
	srv.Script(modeltest.Rule{Path: "/api/chat", Action: modeltest.Action{Reply: func(c modeltest.Chat) string {
		var given []string
		for _, m := range fence.FindAllStringSubmatch(c.Messages[len(c.Messages)-1].Content, -1) {
			given = append(given, m[1])
		}
		b, _ := json.Marshal(reply(given))
		return string(b)
	}}})
	r, err := models.New(models.Config{URL: srv.URL, Model: model})
	if err != nil {
		t.Fatal(err)
	}
	return srv, r
}

type sentence struct {
	Text      string   `json:"text"`
	SourceIDs []string `json:"source_ids"`
}

func sentences(ss ...sentence) any {
	if ss == nil {
		ss = []sentence{}
	}
	return map[string]any{"sentences": ss}
}

func composer(f fixture, r *models.Router) *answers.Composer {
	return &answers.Composer{DB: f.db, Scopes: scope.New(options.Default()), Models: r}
}

func texts(na storage.NewAnswer) []string {
	var out []string
	for _, s := range na.Sentences {
		out = append(out, s.Text.String())
	}
	return out
}

func TestComposer_Compose(t *testing.T) {
	t.Parallel()
	records := [][2]string{
		{"Migrations", "Run make migrate before deploying. The migrations live in db/migrations."},
		{"Migrations in CI", "CI runs the migrations on a scratch database. It fails the build on a dirty schema."},
		{"Unrelated", "The cache is warmed at start."},
	}

	t.Run("OKModel", func(t *testing.T) {
		f := newFixture(t, "How do we run the migrations?", records...)
		srv, r := modelServer(t, func(given []string) any {
			return sentences(
				sentence{"Run make migrate before deploying.", []string{given[0]}},
				sentence{"CI runs them on a scratch database.", []string{given[1], given[0]}},
			)
		})
		na, err := composer(f, r).Compose(ctx, f.q, false)
		if err != nil {
			t.Fatal(err)
		}
		if na.Kind != storage.AnswerModel || na.Model != model || len(na.Sentences) != 2 {
			t.Fatalf("got %+v, want a model answer of 2 sentences", na)
		}
		cited := append(slices.Clone(na.Sentences[0].SourceIDs), na.Sentences[1].SourceIDs...)
		for _, id := range cited {
			if !slices.Contains(f.ids()[:2], id) {
				t.Errorf("cites %s, not one of the migration records", id)
			}
		}
		// The prompt is fenced: the question and each source as data, the
		// fence rule in the system message.
		var chat struct {
			Messages []modeltest.Message `json:"messages"`
		}
		reqs := srv.Requests()
		if err := json.Unmarshal(reqs[len(reqs)-1].Body, &chat); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(chat.Messages[0].Content, models.FenceRule) ||
			!strings.Contains(chat.Messages[1].Content, models.Fence("question", f.q.Text)) ||
			!strings.Contains(chat.Messages[1].Content, models.Fence(f.recs[0].ID, f.recs[0].Title+"\n"+f.recs[0].Content)) {
			t.Errorf("prompt not fenced:\n%s\n%s", chat.Messages[0].Content, chat.Messages[1].Content)
		}
	})

	t.Run("ErrCitesAnIDNotGiven", func(t *testing.T) {
		f := newFixture(t, "How do we run the migrations?", records...)
		const stranger = "01ZZZZZZZZZZZZZZZZZZZZZZZZ"
		_, r := modelServer(t, func(given []string) any {
			return sentences(sentence{"Run make migrate before deploying.", []string{given[0], stranger}})
		})
		c := composer(f, r)
		na, err := c.Compose(ctx, f.q, false)
		if !errors.Is(err, answers.ErrUngrounded) || strings.Contains(err.Error(), stranger) {
			t.Fatalf("got %+v, %v; want ErrUngrounded, not naming the id", na, err)
		}
		// On the job's last try, the records' own sentences answer instead.
		na, err = c.Compose(ctx, f.q, true)
		if err != nil || na.Kind != storage.AnswerExtractive {
			t.Fatalf("last try: %+v, %v; want an extractive answer", na, err)
		}
		for _, s := range na.Sentences {
			if slices.Contains(s.SourceIDs, stranger) {
				t.Errorf("the stranger id is cited: %+v", s)
			}
		}
	})

	t.Run("ErrCitesNothing", func(t *testing.T) {
		f := newFixture(t, "How do we run the migrations?", records...)
		_, r := modelServer(t, func([]string) any { return sentences(sentence{"Run make migrate.", []string{}}) })
		if _, err := composer(f, r).Compose(ctx, f.q, false); !errors.Is(err, answers.ErrUngrounded) {
			t.Errorf("got %v, want ErrUngrounded", err)
		}
	})

	t.Run("ErrScreened", func(t *testing.T) {
		f := newFixture(t, "How do we run the migrations?", records...)
		secret := "ghp_R8mK2xQ7vN4pL9sT3wY6zB1cF5hJ0dG8aE2u"
		_, r := modelServer(t, func(given []string) any {
			return sentences(sentence{"Export GITHUB_TOKEN=" + secret + " first.", []string{given[0]}})
		})
		_, err := composer(f, r).Compose(ctx, f.q, false)
		if err == nil || strings.Contains(err.Error(), secret) {
			t.Errorf("got %v, want a refusal that does not echo the secret", err)
		}
	})

	t.Run("OKFourSentenceCap", func(t *testing.T) {
		f := newFixture(t, "How do we run the migrations?", records...)
		_, r := modelServer(t, func(given []string) any {
			return sentences(
				sentence{"One. Two. Three.", []string{given[0]}},
				sentence{"Four.", []string{given[1]}},
				sentence{"Five.", []string{given[1]}},
				sentence{"Six.", []string{given[0]}},
			)
		})
		na, err := composer(f, r).Compose(ctx, f.q, false)
		if err != nil {
			t.Fatal(err)
		}
		if got := texts(na); !slices.Equal(got, []string{"One.", "Two.", "Three.", "Four."}) {
			t.Errorf("sentences %q, want the first four", got)
		}
		if want := storage.Basis([]string{f.recs[0].ID, f.recs[1].ID},
			[]storage.BasisRecord{storage.BasisOf(f.recs[0]), storage.BasisOf(f.recs[1])}); na.Basis != want {
			t.Errorf("basis %s, want the digest of the two cited records %s", na.Basis, want)
		}
	})

	t.Run("OKCharacterCap", func(t *testing.T) {
		f := newFixture(t, "How do we run the migrations?", records...)
		long := strings.Repeat("migrations run on deploy ", 8) + "end." // 204 characters
		_, r := modelServer(t, func(given []string) any {
			return sentences(sentence{long, given[:1]}, sentence{long, given[:1]}, sentence{long, given[:1]}, sentence{long, given[:1]})
		})
		na, err := composer(f, r).Compose(ctx, f.q, false)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(na.Sentences); n != 2 {
			t.Errorf("kept %d sentences of 204 characters, want 2 within %d", n, answers.MaxChars)
		}
	})

	t.Run("OKCharacterCapOneSentence", func(t *testing.T) {
		long := strings.Repeat("word ", 300) + "end."
		got := answers.Cap([]storage.NewSentence{{Text: storagetest.Text(t, long), SourceIDs: []string{"A"}}})
		if len(got) != 1 || utf8.RuneCountInString(got[0].Text.String()) > answers.MaxChars || !strings.HasSuffix(got[0].Text.String(), "word…") {
			t.Errorf("got %q, want it cut on a word within %d characters", got[0].Text.String(), answers.MaxChars)
		}
	})

	t.Run("OKModelFindsNothing", func(t *testing.T) {
		f := newFixture(t, "How do we run the migrations?", records...)
		_, r := modelServer(t, func([]string) any { return sentences() })
		na, err := composer(f, r).Compose(ctx, f.q, false)
		if err != nil || na.Kind != storage.AnswerNone {
			t.Errorf("got %+v, %v; want kind none", na, err)
		}
	})

	t.Run("OKExtractiveWithoutModel", func(t *testing.T) {
		f := newFixture(t, "How do we run the migrations?", records...)
		for _, r := range []*models.Router{nil, mustRouter(t, models.Config{})} {
			na, err := composer(f, r).Compose(ctx, f.q, false)
			if err != nil {
				t.Fatal(err)
			}
			if na.Kind != storage.AnswerExtractive {
				t.Fatalf("kind %s, want extractive", na.Kind)
			}
			got := texts(na)
			want := []string{"Run make migrate before deploying.", "The migrations live in db/migrations.", "CI runs the migrations on a scratch database."}
			if !slices.Equal(got, want) {
				t.Errorf("sentences %q, want %q", got, want)
			}
			if na.Sentences[2].SourceIDs[0] != f.recs[1].ID || na.Sentences[0].SourceIDs[0] != f.recs[0].ID {
				t.Errorf("citations %+v", na.Sentences)
			}
		}
	})

	t.Run("OKExtractiveTooWeak", func(t *testing.T) {
		// The records share "CI" with the question, and nothing else.
		f := newFixture(t, "Which Python version does CI use?", records...)
		na, err := composer(f, nil).Compose(ctx, f.q, false)
		if err != nil || na.Kind != storage.AnswerNone {
			t.Errorf("got %+v, %v; want kind none", na, err)
		}
	})

	t.Run("OKNothingInScope", func(t *testing.T) {
		f := newFixture(t, "Who owns the billing service?", records...)
		na, err := composer(f, nil).Compose(ctx, f.q, false)
		if err != nil || na.Kind != storage.AnswerNone || len(na.Sentences) != 0 {
			t.Errorf("got %+v, %v; want kind none (%q)", na, err, storage.NoAnswer)
		}
	})

	t.Run("OKOtherScopesLeftOut", func(t *testing.T) {
		f := newFixture(t, "How do we run the migrations?")
		storagetest.Store(t, f.db, storage.NewRecord{Namespace: "github/acme/api",
			Title: storagetest.Text(t, "Migrations"), Content: storagetest.Text(t, "Run make migrate.")})
		na, err := composer(f, nil).Compose(ctx, f.q, false)
		if err != nil || na.Kind != storage.AnswerNone {
			t.Errorf("got %+v, %v; a global question does not read a repository", na, err)
		}
	})
}

func mustRouter(t *testing.T, c models.Config) *models.Router {
	t.Helper()
	r, err := models.New(c)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestSplit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"One. Two! Three? four", []string{"One.", "Two!", "Three? four"}},
		{"Use e.g. the flag. Then go.", []string{"Use e.g. the flag.", "Then go."}},
		{"- first item\n- second item\n\nVersion 1.2.3 is out.", []string{"first item", "second item", "Version 1.2.3 is out."}},
		{"  ", nil},
	} {
		if got := answers.Split(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("Split(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
