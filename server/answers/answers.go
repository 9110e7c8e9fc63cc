// Package answers writes standing answers (docs/design.md R-W3, R-W6, R-W7). A
// Composer takes a question, reads its sources — the full-text hits of the
// question's words in its scope chain — and makes at most four sentences,
// each grounded in the sources it cites: written by a model of the answer
// chain from a fenced prompt, or, without a model, picked from the sources'
// own sentences (extractive). Every sentence passes the screen; the answer
// is cut to MaxChars. With no source, the answer is storage.NoAnswer.
//
// A model's reply is refused (ErrUngrounded) when a sentence cites an id it
// was not given, or none; a reply that screens as a secret is refused too.
// The worker retries a refused or failed call, and answers extractively on
// the job's last attempt.
package answers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hearth-memory/hearth/server/models"
	"github.com/hearth-memory/hearth/server/retrieval"
	"github.com/hearth-memory/hearth/server/scope"
	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/screen"
)

// Limits of an answer.
const (
	// MaxSentences is the most sentences an answer keeps (R-W7).
	MaxSentences = 4
	// MaxChars caps an answer's text, in characters, on its way into the
	// store (R-W7): sentences past it are dropped, and a first sentence
	// longer than it is cut on a word with an ellipsis.
	MaxChars = 600
	// Sources is how many full-text hits an answer is made from.
	Sources = 5
	// maxSourceChars caps each source's text in a model prompt.
	maxSourceChars = 1500
	// maxReplyTokens caps the model's reply.
	maxReplyTokens = 600
)

// DefaultRefresh is which questions get answers and for how long an
// answer whose sources did not change stays fresh: questions asked in two
// sessions or more (with demand above 0), and declared ones; one day.
var DefaultRefresh = storage.AnswerRefresh{MinSessions: 2, MaxAge: 24 * time.Hour}

// ErrUngrounded is a model reply refused because a sentence cites an id the
// model was not given, or cites none.
var ErrUngrounded = errors.New("answers: the model's answer is not grounded in the records it was given")

// Composer makes answers.
type Composer struct {
	// DB holds the questions and the records.
	DB *storage.DB
	// Scopes gives a question's scope chain.
	Scopes *scope.Resolver
	// Models writes answers; nil, or a Router with no server configured,
	// means extractive answers only.
	Models *models.Router
}

// schema is what a model's reply must be: sentences, each with the ids of
// the records it stands on. The counts are checked again here: the cap is
// ours, not the model's.
// It is compiled on first use, not at package init (docs/capture.md).
var schema = sync.OnceValue(func() *models.Schema {
	return models.MustSchema("answer", `{
	"type": "object",
	"required": ["sentences"],
	"additionalProperties": false,
	"properties": {
		"sentences": {
			"type": "array",
			"maxItems": 16,
			"items": {
				"type": "object",
				"required": ["text", "source_ids"],
				"additionalProperties": false,
				"properties": {
					"text": {"type": "string", "maxLength": 2000},
					"source_ids": {"type": "array", "maxItems": 16, "items": {"type": "string", "maxLength": 64}}
				}
			}
		}
	}
}`)
})

// task is the system prompt's task; models.System adds the fence rule.
const task = `You answer a question that coding agents keep asking, from the records given and nothing else.
Reply with one JSON object: {"sentences": [{"text": "...", "source_ids": ["<record id>"]}]}.
Write at most four short sentences. Each sentence states only what the records it cites say. In source_ids list the id of every record the sentence draws on: a record's id is the label of its DATA fence. Never cite any other id.
If the records do not answer the question, reply {"sentences": []}.`

// reply is the model's answer as the schema shapes it.
type reply struct {
	Sentences []struct {
		Text      string   `json:"text"`
		SourceIDs []string `json:"source_ids"`
	} `json:"sentences"`
}

// Compose makes the answer to q. With a model configured and live, with
// budget left, it asks the answer chain; a failed or refused call is
// returned as an error unless lastTry, when the answer is made extractively
// instead. Without a model, or while the budget is spent or calls are
// paused, it answers extractively at once.
func (c *Composer) Compose(ctx context.Context, q *storage.Question, lastTry bool) (storage.NewAnswer, error) {
	na := storage.NewAnswer{QuestionID: q.ID}
	// The sources hold the question's own words: a record found only
	// through a synonym may be about something else, and an answer names
	// its sources as answering.
	ranked, err := retrieval.FTS{DB: c.DB}.Rank(ctx, retrieval.Query{
		Text: q.Text, Chain: c.Scopes.Chain(q.Namespace, nil), Depth: Sources, Literal: true,
	})
	if err != nil {
		return na, err
	}
	hits := ranked.Hits
	if len(hits) == 0 {
		na.Kind, na.Basis = storage.AnswerNone, storage.Basis(nil, nil)
		return na, nil
	}
	recs := make([]*storage.Record, len(hits))
	for i, h := range hits {
		recs[i] = h.Record
	}
	if c.Models != nil && c.Models.Configured() && c.Models.Available() {
		na, err := c.fromModel(ctx, q, recs)
		if err == nil || !lastTry || ctx.Err() != nil {
			return na, err
		}
	}
	return Extract(q, recs)
}

// fromModel asks the answer chain and checks what it wrote.
func (c *Composer) fromModel(ctx context.Context, q *storage.Question, recs []*storage.Record) (storage.NewAnswer, error) {
	na := storage.NewAnswer{QuestionID: q.ID, Kind: storage.AnswerModel}
	var out reply
	res, err := c.Models.Call(ctx, models.Request{
		Kind: models.Answer, System: models.System(task), User: Prompt(q.Text, recs),
		Schema: schema(), MaxTokens: maxReplyTokens,
	}, &out)
	if err != nil {
		return na, fmt.Errorf("answers: model: %w", err)
	}
	na.Model = res.Model
	given := make([]string, len(recs))
	for i, r := range recs {
		given[i] = r.ID
	}
	var sents []storage.NewSentence
	for i, s := range out.Sentences {
		if len(s.SourceIDs) == 0 {
			return na, fmt.Errorf("%w: sentence %d cites no record", ErrUngrounded, i+1)
		}
		for _, id := range s.SourceIDs {
			if !slices.Contains(given, id) {
				// The id is the model's text: never echoed (it may be anything).
				return na, fmt.Errorf("%w: sentence %d cites an id it was not given", ErrUngrounded, i+1)
			}
		}
		for _, part := range Split(s.Text) {
			t, err := screen.Check("answer", part)
			if err != nil {
				return na, fmt.Errorf("answers: the model's answer was refused: %w", err)
			}
			sents = append(sents, storage.NewSentence{Text: t, SourceIDs: uniq(s.SourceIDs)})
		}
	}
	return settle(na, sents, recs), nil
}

// Prompt is the user message of an answer call: the question and each
// source fenced as data, a source's fence labelled with its record id.
func Prompt(question string, recs []*storage.Record) string {
	var b strings.Builder
	b.WriteString("Question:\n")
	b.WriteString(models.Fence("question", question))
	b.WriteString("\n\nRecords (each fence's label is the record's id):\n")
	for _, r := range recs {
		body := r.Title + "\n" + r.Content
		if utf8.RuneCountInString(body) > maxSourceChars {
			body = string([]rune(body)[:maxSourceChars]) + "…"
		}
		b.WriteString(models.Fence(r.ID, body))
		b.WriteString("\n")
	}
	return b.String()
}

// Extract answers q without a model: the sources' sentences sharing the
// most of the question's words (their stems, as QuestionKey makes them),
// at most MaxSentences, each citing its record, in source order. A
// sentence must share at least half of the question's words (rounded up):
// a record that shares one word of four with the question does not answer
// it, and when no sentence qualifies the answer is storage.NoAnswer.
func Extract(q *storage.Question, recs []*storage.Record) (storage.NewAnswer, error) {
	na := storage.NewAnswer{QuestionID: q.ID, Kind: storage.AnswerExtractive}
	if len(recs) == 0 {
		na.Kind, na.Basis = storage.AnswerNone, storage.Basis(nil, nil)
		return na, nil
	}
	want := strings.Fields(storage.QuestionKey(q.Text))
	type cand struct {
		text            string
		src, pos, score int
		sourceID        string
	}
	var cands []cand
	for i, r := range recs {
		for j, s := range Split(r.Content) {
			score := 0
			for _, w := range strings.Fields(storage.QuestionKey(s)) {
				if slices.Contains(want, w) {
					score++
				}
			}
			cands = append(cands, cand{text: s, src: i, pos: j, score: score, sourceID: r.ID})
		}
	}
	need := max(1, (len(want)+1)/2)
	best := slices.Clone(cands)
	slices.SortStableFunc(best, func(a, b cand) int { return b.score - a.score })
	var picked []cand
	for _, c := range best {
		if c.score < need || len(picked) == MaxSentences {
			break
		}
		picked = append(picked, c)
	}
	slices.SortFunc(picked, func(a, b cand) int {
		if a.src != b.src {
			return a.src - b.src
		}
		return a.pos - b.pos
	})
	var sents []storage.NewSentence
	for _, c := range picked {
		t, err := screen.Check("answer", c.text)
		if err != nil {
			continue // stored text passed the screen; a join of it may not
		}
		sents = append(sents, storage.NewSentence{Text: t, SourceIDs: []string{c.sourceID}})
	}
	return settle(na, sents, recs), nil
}

// settle completes na with sents: no answer when there is none, else the
// capped sentences and the basis of the records they cite.
func settle(na storage.NewAnswer, sents []storage.NewSentence, recs []*storage.Record) storage.NewAnswer {
	if len(sents) == 0 {
		na.Kind, na.Basis = storage.AnswerNone, storage.Basis(nil, nil)
		return na
	}
	na.Sentences = Cap(sents)
	na.Basis = basis(na.Sentences, recs)
	return na
}

// Cap keeps at most MaxSentences sentences, then drops sentences from the
// end while the text (sentences joined by spaces) is longer than MaxChars;
// a first sentence longer than that alone is cut on a word boundary and
// ends in an ellipsis.
func Cap(sents []storage.NewSentence) []storage.NewSentence {
	if len(sents) > MaxSentences {
		sents = sents[:MaxSentences]
	}
	for len(sents) > 1 && chars(sents) > MaxChars {
		sents = sents[:len(sents)-1]
	}
	if len(sents) == 1 && chars(sents) > MaxChars {
		r := []rune(sents[0].Text.String())[:MaxChars-1]
		cut := string(r)
		if i := strings.LastIndexFunc(cut, unicode.IsSpace); i > MaxChars/2 {
			cut = cut[:i]
		}
		t, err := screen.Check("answer", strings.TrimRightFunc(cut, unicode.IsSpace)+"…")
		if err != nil {
			return nil
		}
		sents = []storage.NewSentence{{Text: t, SourceIDs: sents[0].SourceIDs}}
	}
	return sents
}

// chars is the length in characters of the sentences joined by spaces.
func chars(sents []storage.NewSentence) int {
	n := len(sents) - 1
	for _, s := range sents {
		n += utf8.RuneCountInString(s.Text.String())
	}
	return n
}

// Split breaks text into sentences: after '.', '!' or '?' followed by a
// space and a character that is not lower case, and at line breaks (list
// items are sentences of their own). Spaces are trimmed; empty parts go.
func Split(text string) []string {
	var out []string
	add := func(s string) {
		if s = strings.Join(strings.Fields(s), " "); s != "" {
			out = append(out, s)
		}
	}
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimLeft(strings.TrimSpace(line), "-*• ")
		start := 0
		rs := []rune(line)
		for i := 0; i < len(rs); i++ {
			if rs[i] != '.' && rs[i] != '!' && rs[i] != '?' {
				continue
			}
			j := i + 1
			if j >= len(rs) || !unicode.IsSpace(rs[j]) {
				continue
			}
			for j < len(rs) && unicode.IsSpace(rs[j]) {
				j++
			}
			if j < len(rs) && unicode.IsLower(rs[j]) {
				continue // e.g. "i.e. the"
			}
			add(string(rs[start : i+1]))
			start = j
			i = j - 1
		}
		add(string(rs[start:]))
	}
	return out
}

// basis digests the records the sentences cite, as they were given.
func basis(sents []storage.NewSentence, recs []*storage.Record) string {
	var ids []string
	for _, s := range sents {
		for _, id := range s.SourceIDs {
			if !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	br := make([]storage.BasisRecord, len(recs))
	for i, r := range recs {
		br[i] = storage.BasisOf(r)
	}
	return storage.Basis(ids, br)
}

func uniq(ss []string) []string {
	var out []string
	for _, s := range ss {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}
