// Package answers is the questions' standing answers below the record
// domain (docs/design.md, "Storage layout"; R-W3 to R-W6): an answer's
// kinds and sentences, the basis digest that says when it went stale, the
// rules a new answer keeps, the statements that store and read answers by
// their question's seq, and which question's answer is due next.
//
// It works inside the engine's transactions (*engine.Tx) and knows nothing
// of records: the records an answer cites, read for its basis, and the
// questions it joins are the storage package's. Its refusals are
// *errs.Error.
package answers

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hearth-memory/hearth/storage/internal/engine"
	"github.com/hearth-memory/hearth/storage/internal/errs"
	"github.com/hearth-memory/hearth/storage/internal/jobq"
	"github.com/hearth-memory/hearth/storage/screen"
)

// KindJob is the job that refreshes one question's standing answer
// (docs/design.md R-W3); its payload is {"question_id": "<id>"}.
const KindJob = "answer"

// Attempts is how often an answer job is tried: the handler falls back to
// an extractive answer on the last.
const Attempts = 3

// Answer kinds.
const (
	// Model: written by a model from the cited records.
	Model = "model"
	// Extractive: the best sentences of the records, cited, picked
	// without a model.
	Extractive = "extractive"
	// None: no record in scope answers the question; the text is NoAnswer
	// and nothing is cited.
	None = "none"
)

// NoAnswer is the text of an answer of kind None (docs/design.md R-W6).
const NoAnswer = "No record in scope answers this."

// Sentence is one sentence of an answer and the records it stands on.
type Sentence struct {
	Text      string   `json:"text"`
	SourceIDs []string `json:"source_ids"`
}

// Answer is a question's standing answer.
type Answer struct {
	// Text is the sentences joined by spaces.
	Text      string
	Sentences []Sentence
	// SourceIDs are the cited records, in order of first citation.
	SourceIDs []string
	// Basis is the digest of the cited records when the answer was made.
	Basis string
	// Kind is Model, Extractive or None; Model names the model of a model
	// answer.
	Kind, Model string
	// JobID is the job that made it.
	JobID       string
	GeneratedAt time.Time
	// Stale is set when the cited records as they are now digest to
	// another basis (one changed, or is gone) (docs/design.md R-W5).
	Stale bool
}

// BasisRecord is what a basis digests of one record.
type BasisRecord struct {
	ID             string
	UpdatedAt      time.Time
	Title, Content string
}

// Basis digests the records cited, in the order of ids: for each id its
// updated_at (unix milliseconds), title and content, or a mark when no
// record has the id any more. It is a lower-case hex SHA-256, so staleness
// is a string comparison (docs/design.md R-W5). recs may be in any order and hold
// others.
func Basis(ids []string, recs []BasisRecord) string {
	byID := make(map[string]BasisRecord, len(recs))
	for _, r := range recs {
		byID[r.ID] = r
	}
	h := sha256.New()
	var n [8]byte
	field := func(s string) {
		putLen(n[:], len(s))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	for _, id := range ids {
		field(id)
		r, ok := byID[id]
		if !ok {
			field("\x00gone")
			continue
		}
		field(strconv.FormatInt(r.UpdatedAt.UnixMilli(), 10))
		field(r.Title)
		field(r.Content)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func putLen(b []byte, n int) {
	for i := range b {
		b[i] = byte(uint64(n) >> (8 * i))
	}
}

// NewSentence is one sentence to store, screened.
type NewSentence struct {
	Text      screen.Text
	SourceIDs []string
}

// NewAnswer is a refreshed answer to store.
type NewAnswer struct {
	QuestionID string
	// Kind is Model, Extractive or None. A model or extractive answer has
	// sentences, each citing at least one record; a None answer has none.
	Kind  string
	Model string
	// Sentences in order; their text, joined by spaces, is the answer's.
	Sentences []NewSentence
	// Basis is Basis of the cited records as the answer was made from them:
	// a record that changed since then makes the answer stale at once.
	Basis string
}

// Checked is a NewAnswer that keeps the rules, ready to store.
type Checked struct {
	na      NewAnswer
	text    screen.Text
	sents   []Sentence
	sources []string
}

// Check returns Invalid for an answer that breaks NewAnswer's rules (Field
// "kind", "sentences" or "sentences[i]"), and the screen's refusal when
// its joined text screens as a secret.
func Check(na NewAnswer) (*Checked, error) {
	c := &Checked{na: na}
	var texts []string
	switch na.Kind {
	case Model, Extractive:
		if len(na.Sentences) == 0 {
			return nil, errs.Errorf(errs.Invalid, "sentences", "a %s answer needs sentences", na.Kind)
		}
	case None:
		if len(na.Sentences) != 0 {
			return nil, errs.Errorf(errs.Invalid, "sentences", "an answer of kind none has no sentences")
		}
		texts = []string{NoAnswer}
	default:
		return nil, errs.Errorf(errs.Invalid, "kind", "must be model, extractive or none")
	}
	for i, s := range na.Sentences {
		if strings.TrimSpace(s.Text.String()) == "" || len(s.SourceIDs) == 0 {
			return nil, errs.Errorf(errs.Invalid, "sentences["+strconv.Itoa(i)+"]", "needs text and at least one source id")
		}
		texts = append(texts, s.Text.String())
		c.sents = append(c.sents, Sentence{Text: s.Text.String(), SourceIDs: slices.Clone(s.SourceIDs)})
		for _, id := range s.SourceIDs {
			if !slices.Contains(c.sources, id) {
				c.sources = append(c.sources, id)
			}
		}
	}
	text, err := screen.Check("answer", strings.Join(texts, " "))
	if err != nil {
		return nil, err
	}
	c.text = text
	if c.sents == nil {
		c.sents = []Sentence{}
	}
	return c, nil
}

// Store stores c as the answer of the question keyed seq, made by job
// jobID, replacing the one before, with the rows that say which records
// it cites.
func Store(ctx context.Context, tx *engine.Tx, seq int64, jobID string, c *Checked) error {
	sentsJSON, _ := json.Marshal(c.sents)     // strings and string lists always marshal
	sourcesJSON, _ := json.Marshal(c.sources) // a []string always marshals
	if len(c.sources) == 0 {
		sourcesJSON = []byte("[]")
	}
	if _, err := tx.ExecContext(ctx, `
		INSERT INTO answers (question, text, sentences, source_ids, basis, kind, model, job_id, generated_at, current)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 1)
		ON CONFLICT (question) DO UPDATE SET text = excluded.text, sentences = excluded.sentences,
			source_ids = excluded.source_ids, basis = excluded.basis, kind = excluded.kind, model = excluded.model,
			job_id = excluded.job_id, generated_at = excluded.generated_at, current = 1`,
		seq, c.text.String(), string(sentsJSON), string(sourcesJSON), c.na.Basis, c.na.Kind, c.na.Model, jobID, tx.Now.UnixMilli(),
	); err != nil {
		return errs.Wrap("store answer", err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM answer_sources WHERE question = ?`, seq); err != nil {
		return errs.Wrap("store answer", err)
	}
	for _, id := range c.sources {
		if _, err := tx.ExecContext(ctx, `INSERT INTO answer_sources (record_id, question) VALUES (?, ?)`, id, seq); err != nil {
			return errs.Wrap("store answer", err)
		}
	}
	return nil
}

// Read returns the answers of the questions keyed seqs, by seq; a question
// with no answer has none. Their Stale is the caller's to set (it reads
// the cited records).
func Read(ctx context.Context, tx *engine.Tx, seqs []int64) (map[int64]*Answer, error) {
	out := make(map[int64]*Answer, len(seqs))
	if len(seqs) == 0 {
		return out, nil
	}
	keys := make([]string, len(seqs))
	for i, seq := range seqs {
		keys[i] = strconv.FormatInt(seq, 10)
	}
	list, _ := json.Marshal(keys) // a []string always marshals
	rows, err := tx.QueryContext(ctx, `
		SELECT question, text, sentences, source_ids, basis, kind, model, job_id, generated_at
		FROM answers WHERE question IN (SELECT CAST(value AS BIGINT) FROM json_each(?))`, string(list))
	if err != nil {
		return nil, errs.Wrap("answers", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			a                  Answer
			seq, generated     int64
			sentences, sources string
		)
		if err := rows.Scan(&seq, &a.Text, &sentences, &sources, &a.Basis, &a.Kind, &a.Model, &a.JobID, &generated); err != nil {
			return nil, errs.Wrap("answers", err)
		}
		if err := json.Unmarshal([]byte(sentences), &a.Sentences); err != nil {
			return nil, errs.Wrap("answers", err)
		}
		if err := json.Unmarshal([]byte(sources), &a.SourceIDs); err != nil {
			return nil, errs.Wrap("answers", err)
		}
		a.GeneratedAt = time.UnixMilli(generated).UTC()
		out[seq] = &a
	}
	return out, errs.Wrap("answers", rows.Err())
}

// Refresh says which questions deserve a standing answer and when one is
// due again (docs/design.md R-W3).
type Refresh struct {
	// MinSessions is how many distinct sessions must have asked a question
	// (with demand above 0) for it to be answered; a declared question is
	// answered whatever its figures.
	MinSessions int
	// MaxAge is how long an answer whose sources did not change stays
	// fresh; older ones are made again (records added to the scope since
	// may answer better).
	MaxAge time.Duration
}

// sqlNextDue selects the id of the question whose answer is due first: the
// highest demand (in the demand index's order) among those that deserve an
// answer (?2 MinSessions) and have none, a stale one, or one made at or
// before ?1.
const sqlNextDue = `SELECT q.id FROM questions AS q LEFT JOIN answers AS a ON a.question = q.seq
	WHERE (q.declared = 1 OR (q.sessions >= ?2 AND q.demand > 0))
		AND (a.question IS NULL OR a.current = 0 OR a.generated_at <= ?1)
	ORDER BY q.demand DESC, q.id LIMIT 1`

// NextDue returns the id of the question whose answer is due first, or ""
// when none is or an answer job is already pending.
func NextDue(ctx context.Context, tx *engine.Tx, r Refresh) (string, error) {
	if pending, err := jobq.Pending(ctx, tx, KindJob); err != nil || pending {
		return "", err
	}
	var id string
	err := tx.QueryRowContext(ctx, sqlNextDue, tx.Now.Add(-r.MaxAge).UnixMilli(), r.MinSessions).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return id, errs.Wrap("answer due", err)
}
