package storage

import (
	"context"
	"encoding/json"
	"time"

	"github.com/hearth-memory/hearth/storage/internal/answers"
	"github.com/hearth-memory/hearth/storage/screen"
)

// A question's standing answer is package answers (docs/design.md,
// "Storage layout"); these are its names as the server uses them.
type (
	// Sentence is one sentence of an answer and the records it stands on.
	Sentence = answers.Sentence
	// Answer is a question's standing answer.
	Answer = answers.Answer
	// BasisRecord is what a basis digests of one record.
	BasisRecord = answers.BasisRecord
	// NewSentence is one sentence to store, screened.
	NewSentence = answers.NewSentence
	// NewAnswer is a refreshed answer to store.
	NewAnswer = answers.NewAnswer
	// AnswerRefresh says which questions deserve a standing answer and
	// when one is due again (docs/design.md R-W3).
	AnswerRefresh = answers.Refresh
)

// The answer job, its tries, the answer kinds and the text of no answer;
// package answers says what each means.
const (
	KindAnswer     = answers.KindJob
	AnswerAttempts = answers.Attempts

	AnswerModel      = answers.Model
	AnswerExtractive = answers.Extractive
	AnswerNone       = answers.None
	NoAnswer         = answers.NoAnswer
)

// Basis digests the records cited, in the order of ids (answers.Basis).
func Basis(ids []string, recs []BasisRecord) string { return answers.Basis(ids, recs) }

// BasisOf returns what Basis digests of a record.
func BasisOf(r *Record) BasisRecord {
	return BasisRecord{ID: r.ID, UpdatedAt: r.UpdatedAt, Title: r.Title, Content: r.Content}
}

// StoreAnswer stores a question's answer, replacing the one before, inside
// the job's completion transaction (docs/design.md R-R6): the answer and the job's
// done state commit together. It returns NotFound (Field "question_id")
// when the question is gone (purged) and Invalid for an answer that breaks
// NewAnswer's rules or whose joined text screens as a secret
// (answers.Check).
func (t *JobTx) StoreAnswer(ctx context.Context, jobID string, na NewAnswer) error {
	c, err := answers.Check(na)
	if err != nil {
		return lift(err)
	}
	q, err := questionByIDTx(ctx, t.tx, na.QuestionID)
	if err != nil {
		return err
	}
	return lift(answers.Store(ctx, t.tx, q.Seq, jobID, c))
}

// attachAnswersTx reads the answers of qs and sets each one's Stale against
// the cited records as they are in this transaction's snapshot.
func attachAnswersTx(ctx context.Context, tx *txn, qs []*Question) error {
	if len(qs) == 0 {
		return nil
	}
	seqs := make([]int64, len(qs))
	for i, q := range qs {
		seqs[i] = q.Seq
	}
	bySeq, err := answers.Read(ctx, tx, seqs)
	if err != nil {
		return lift(err)
	}
	var cited []string
	for _, q := range qs {
		if a := bySeq[q.Seq]; a != nil {
			q.Answer = a
			cited = append(cited, a.SourceIDs...)
		}
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

// QueueAnswer queues one answer job, for the question with the highest
// demand that deserves an answer and has none, or a stale one, or one older
// than MaxAge, unless an answer job is already queued or leased: the
// worker's idle poll calls it, so answers are refreshed one at a time. It
// returns the job, or nil when nothing is due. An idle store costs one
// read, no write transaction.
func (db *DB) QueueAnswer(ctx context.Context, r AnswerRefresh) (*Job, error) {
	var due string
	if err := db.read(ctx, "answer due", func(tx *txn) (err error) {
		due, err = answers.NextDue(ctx, tx, r)
		return lift(err)
	}); err != nil || due == "" {
		return nil, err
	}
	var job *Job
	err := db.writeGrouped(ctx, opQueueAnswer, func(tx *txn) error {
		id, err := answers.NextDue(ctx, tx, r)
		if err != nil || id == "" {
			job = nil
			return lift(err)
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
