package storage

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hearth-memory/hearth/storage/internal/jobq"
	"github.com/hearth-memory/hearth/storage/screen"
)

// KindAnswer is the job that refreshes one question's standing answer
// (docs/design.md R-W3); its payload is {"question_id": "<id>"}.
const KindAnswer = "answer"

// Answer kinds.
const (
	// AnswerModel: written by a model from the cited records.
	AnswerModel = "model"
	// AnswerExtractive: the best sentences of the records, cited, picked
	// without a model.
	AnswerExtractive = "extractive"
	// AnswerNone: no record in scope answers the question; the text is
	// NoAnswer and nothing is cited.
	AnswerNone = "none"
)

// NoAnswer is the text of an answer of kind AnswerNone (docs/design.md R-W6).
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
	// Kind is AnswerModel, AnswerExtractive or AnswerNone; Model names the
	// model of a model answer.
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

// BasisOf returns what Basis digests of a record.
func BasisOf(r *Record) BasisRecord {
	return BasisRecord{ID: r.ID, UpdatedAt: r.UpdatedAt, Title: r.Title, Content: r.Content}
}

// NewSentence is one sentence to store, screened.
type NewSentence struct {
	Text      screen.Text
	SourceIDs []string
}

// NewAnswer is a refreshed answer to store.
type NewAnswer struct {
	QuestionID string
	// Kind is AnswerModel, AnswerExtractive or AnswerNone. A model or
	// extractive answer has sentences, each citing at least one record; an
	// AnswerNone answer has none.
	Kind  string
	Model string
	// Sentences in order; their text, joined by spaces, is the answer's.
	Sentences []NewSentence
	// Basis is Basis of the cited records as the answer was made from them:
	// a record that changed since then makes the answer stale at once.
	Basis string
}

// StoreAnswer stores a question's answer, replacing the one before, inside
// the job's completion transaction (docs/design.md R-R6): the answer and the job's
// done state commit together. It returns NotFound (Field "question_id")
// when the question is gone (purged) and Invalid for an answer that breaks
// NewAnswer's rules or whose joined text screens as a secret.
func (t *JobTx) StoreAnswer(ctx context.Context, jobID string, na NewAnswer) error {
	var (
		texts   []string
		sents   []Sentence
		sources []string
	)
	switch na.Kind {
	case AnswerModel, AnswerExtractive:
		if len(na.Sentences) == 0 {
			return errorf(Invalid, "sentences", "a %s answer needs sentences", na.Kind)
		}
	case AnswerNone:
		if len(na.Sentences) != 0 {
			return errorf(Invalid, "sentences", "an answer of kind none has no sentences")
		}
		texts = []string{NoAnswer}
	default:
		return errorf(Invalid, "kind", "must be model, extractive or none")
	}
	for i, s := range na.Sentences {
		if strings.TrimSpace(s.Text.String()) == "" || len(s.SourceIDs) == 0 {
			return errorf(Invalid, "sentences["+strconv.Itoa(i)+"]", "needs text and at least one source id")
		}
		texts = append(texts, s.Text.String())
		sents = append(sents, Sentence{Text: s.Text.String(), SourceIDs: slices.Clone(s.SourceIDs)})
		for _, id := range s.SourceIDs {
			if !slices.Contains(sources, id) {
				sources = append(sources, id)
			}
		}
	}
	text, err := screen.Check("answer", strings.Join(texts, " "))
	if err != nil {
		return err
	}
	if sents == nil {
		sents = []Sentence{}
	}
	sentsJSON, _ := json.Marshal(sents) // strings and string lists always marshal

	q, err := questionByIDTx(ctx, t.tx, na.QuestionID)
	if err != nil {
		return err
	}
	if _, err := t.tx.ExecContext(ctx, `
		INSERT INTO answers (question, text, sentences, source_ids, basis, kind, model, job_id, generated_at, current)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 1)
		ON CONFLICT (question) DO UPDATE SET text = excluded.text, sentences = excluded.sentences,
			source_ids = excluded.source_ids, basis = excluded.basis, kind = excluded.kind, model = excluded.model,
			job_id = excluded.job_id, generated_at = excluded.generated_at, current = 1`,
		q.seq, text.String(), string(sentsJSON), topicsJSON(sources), na.Basis, na.Kind, na.Model, jobID, t.tx.Now.UnixMilli(),
	); err != nil {
		return classify("store answer", err)
	}
	if _, err := t.tx.ExecContext(ctx, `DELETE FROM answer_sources WHERE question = ?`, q.seq); err != nil {
		return classify("store answer", err)
	}
	for _, id := range sources {
		if _, err := t.tx.ExecContext(ctx, `INSERT INTO answer_sources (record_id, question) VALUES (?, ?)`, id, q.seq); err != nil {
			return classify("store answer", err)
		}
	}
	return nil
}

// attachAnswersTx reads the answers of qs and sets each one's Stale against
// the cited records as they are in this transaction's snapshot.
func attachAnswersTx(ctx context.Context, tx *txn, qs []*Question) error {
	if len(qs) == 0 {
		return nil
	}
	bySeq := make(map[int64]*Question, len(qs))
	seqs := make([]string, len(qs))
	for i, q := range qs {
		bySeq[q.seq] = q
		seqs[i] = strconv.FormatInt(q.seq, 10)
	}
	rows, err := tx.QueryContext(ctx, `
		SELECT question, text, sentences, source_ids, basis, kind, model, job_id, generated_at
		FROM answers WHERE question IN (SELECT CAST(value AS BIGINT) FROM json_each(?))`, jsonList(seqs))
	if err != nil {
		return classify("answers", err)
	}
	defer rows.Close()
	var cited []string
	for rows.Next() {
		var (
			a                  Answer
			seq, generated     int64
			sentences, sources string
		)
		if err := rows.Scan(&seq, &a.Text, &sentences, &sources, &a.Basis, &a.Kind, &a.Model, &a.JobID, &generated); err != nil {
			return classify("answers", err)
		}
		if err := json.Unmarshal([]byte(sentences), &a.Sentences); err != nil {
			return classify("answers", err)
		}
		if err := json.Unmarshal([]byte(sources), &a.SourceIDs); err != nil {
			return classify("answers", err)
		}
		a.GeneratedAt = time.UnixMilli(generated).UTC()
		bySeq[seq].Answer = &a
		cited = append(cited, a.SourceIDs...)
	}
	if err := rows.Err(); err != nil {
		return classify("answers", err)
	}
	recs, err := basisRecordsTx(ctx, tx, uniq(cited))
	if err != nil {
		return err
	}
	for _, q := range qs {
		if a := q.Answer; a != nil {
			a.Stale = Basis(a.SourceIDs, recs) != a.Basis
		}
	}
	return nil
}

// basisRecordsTx reads what Basis digests of the records ids, whatever
// their status; ids with no record are left out.
func basisRecordsTx(ctx context.Context, tx *txn, ids []string) ([]BasisRecord, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := tx.QueryContext(ctx, `
		SELECT id, updated_at, title, content FROM records WHERE id IN (SELECT value FROM json_each(?))`, jsonList(ids))
	if err != nil {
		return nil, classify("answer sources", err)
	}
	defer rows.Close()
	var out []BasisRecord
	for rows.Next() {
		var (
			r   BasisRecord
			upd int64
		)
		if err := rows.Scan(&r.ID, &upd, &r.Title, &r.Content); err != nil {
			return nil, classify("answer sources", err)
		}
		r.UpdatedAt = time.UnixMilli(upd).UTC()
		out = append(out, r)
	}
	return out, classify("answer sources", rows.Err())
}

// AnswerRefresh says which questions deserve a standing answer and when
// one is due again (docs/design.md R-W3).
type AnswerRefresh struct {
	// MinSessions is how many distinct sessions must have asked a question
	// (with demand above 0) for it to be answered; a declared question is
	// answered whatever its figures.
	MinSessions int
	// MaxAge is how long an answer whose sources did not change stays
	// fresh; older ones are made again (records added to the scope since
	// may answer better).
	MaxAge time.Duration
}

// nextDue selects the id of the question whose answer is due first: the
// highest demand (in the demand index's order) among those that deserve an
// answer (?2 MinSessions) and have none, a stale one, or one made at or
// before ?1.
const nextDue = `SELECT q.id FROM questions AS q LEFT JOIN answers AS a ON a.question = q.seq
	WHERE (q.declared = 1 OR (q.sessions >= ?2 AND q.demand > 0))
		AND (a.question IS NULL OR a.current = 0 OR a.generated_at <= ?1)
	ORDER BY q.demand DESC, q.id LIMIT 1`

// nextDueTx returns the question whose answer is due first, or "" when none
// is or an answer job is already pending.
func nextDueTx(ctx context.Context, tx *txn, r AnswerRefresh) (string, error) {
	if pending, err := jobq.Pending(ctx, tx, KindAnswer); err != nil || pending {
		return "", err
	}
	var id string
	err := tx.QueryRowContext(ctx, nextDue, tx.Now.Add(-r.MaxAge).UnixMilli(), r.MinSessions).Scan(&id)
	if err == sql.ErrNoRows {
		return "", nil
	}
	return id, classify("answer due", err)
}

// QueueAnswer queues one answer job, for the question with the highest
// demand that deserves an answer and has none, or a stale one, or one older
// than MaxAge, unless an answer job is already queued or leased: the
// worker's idle poll calls it, so answers are refreshed one at a time. It
// returns the job, or nil when nothing is due. An idle store costs one
// read, no write transaction.
func (db *DB) QueueAnswer(ctx context.Context, r AnswerRefresh) (*Job, error) {
	var due string
	if err := db.read(ctx, "answer due", func(tx *txn) (err error) {
		due, err = nextDueTx(ctx, tx, r)
		return err
	}); err != nil || due == "" {
		return nil, err
	}
	var job *Job
	err := db.write(ctx, opQueueAnswer, func(tx *txn) error {
		id, err := nextDueTx(ctx, tx, r)
		if err != nil || id == "" {
			job = nil
			return err
		}
		payload, err := json.Marshal(map[string]string{"question_id": id})
		if err != nil {
			return classify("queue answer", err)
		}
		p, err := screen.Check("payload", string(payload))
		if err != nil {
			return err
		}
		j, _, err := db.enqueueTx(ctx, tx, NewJob{Kind: KindAnswer, Payload: p, MaxAttempts: AnswerAttempts})
		job = j
		return err
	})
	return job, err
}

// AnswerAttempts is how often an answer job is tried: the handler falls
// back to an extractive answer on the last.
const AnswerAttempts = 3

// purgeAskedTx deletes recorded queries asked at or before cutoff, then the
// questions nobody asked any more and nobody declared (docs/design.md R-J4); their
// answers go with them.
func purgeAskedTx(ctx context.Context, tx *txn, cutoff int64) (asks, questions int, err error) {
	res, err := tx.ExecContext(ctx, `DELETE FROM asked WHERE at <= ?`, cutoff)
	if err != nil {
		return 0, 0, classify("purge asks", err)
	}
	asks = rowsAffected(res)
	res, err = tx.ExecContext(ctx, `DELETE FROM questions WHERE asks = 0 AND declared = 0`)
	if err != nil {
		return 0, 0, classify("purge questions", err)
	}
	return asks, rowsAffected(res), nil
}
