package storage

import (
	"context"

	"github.com/hearth-memory/hearth/storage/internal/questions"
	"github.com/hearth-memory/hearth/storage/screen"
)

// MaxQuestionChars bounds a question's stored text; longer wordings are cut
// (the key is made from the whole text first).
const MaxQuestionChars = questions.MaxChars

// QuestionKey returns the normalised form that groups recorded queries into
// questions (docs/design.md R-W1); questions.Key says how it is made. It
// returns "" for a text with no meaningful word, which is never recorded.
func QuestionKey(text string) string { return questions.Key(text) }

// Answer states of a question.
const (
	// AnswerUnanswered: no answer was made yet.
	AnswerUnanswered = "unanswered"
	// AnswerFresh: the answer's basis matches its sources as they are now.
	AnswerFresh = "fresh"
	// AnswerStale: a source changed or went since the answer was made.
	AnswerStale = "stale"
)

// Question is a group of recorded queries sharing a key within a namespace,
// or a declared question, with its figures (questions.Row) and its standing
// answer (docs/design.md R-W1, R-W2).
type Question struct {
	questions.Row
	// Answer is the standing answer, nil while unanswered; its Stale is set
	// against the sources as they were read with the question.
	Answer *Answer
}

// asQuestion is the question of a row, its answer not yet attached.
func asQuestion(r questions.Row) *Question { return &Question{Row: r} }

// AnswerState is AnswerUnanswered, AnswerFresh or AnswerStale.
func (q *Question) AnswerState() string {
	switch {
	case q.Answer == nil:
		return AnswerUnanswered
	case q.Answer.Stale:
		return AnswerStale
	}
	return AnswerFresh
}

// MaxClientSessions is the most sessions of one client that add to a
// question's weight (migration 0091).
const MaxClientSessions = questions.MaxClientSessions

// SessionWeight is what one client's n distinct sessions add to a
// question's weight (questions.SessionWeight).
func SessionWeight(n int) float64 { return questions.SessionWeight(n) }

// Demand is the documented demand formula (docs/design.md R-W2,
// questions.Demand): weight × (1 − share of asks whose hits were used).
func Demand(asks, used int, weight float64) float64 { return questions.Demand(asks, used, weight) }

// QuestionsQuery selects questions for memory_questions.
type QuestionsQuery struct {
	// Namespaces is the scope chain; empty means every namespace.
	Namespaces []string
	// Limit caps the questions; <= 0 means 10.
	Limit int
}

// Questions returns the questions of the chain by demand, highest first,
// then the oldest (the order of the demand index), each with its answer and
// whether that answer is stale.
func (db *DB) Questions(ctx context.Context, q QuestionsQuery) ([]*Question, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = 10
	}
	var out []*Question
	err := db.read(ctx, "questions", func(tx *txn) error {
		qs, err := findQuestionsTx(ctx, tx, `
			WHERE (CAST(?1 AS TEXT) IS NULL OR q.namespace IN (SELECT value FROM json_each(?1)))
			ORDER BY q.demand DESC, q.id
			LIMIT +?2`, jsonList(q.Namespaces), limit)
		if err != nil {
			return err
		}
		if err := attachAnswersTx(ctx, tx, qs); err != nil {
			return err
		}
		out = qs
		return nil
	})
	return out, err
}

// Question returns the question id with its answer. It returns NotFound
// (Field "question_id") for an unknown id.
func (db *DB) Question(ctx context.Context, id string) (*Question, error) {
	var out *Question
	err := db.read(ctx, "question", func(tx *txn) error {
		q, err := questionByIDTx(ctx, tx, id)
		if err != nil {
			return err
		}
		if err := attachAnswersTx(ctx, tx, []*Question{q}); err != nil {
			return err
		}
		out = q
		return nil
	})
	return out, err
}

// FindQuestion returns the question asked as text in the first namespace of
// chain that has one, with its answer: the same question however it is
// worded (QuestionKey). It is one read: no search, no model. It returns
// Invalid (Field "text") for a text with no meaningful word and NotFound
// (Field "text") when no namespace of the chain has the question.
func (db *DB) FindQuestion(ctx context.Context, chain []string, text string) (*Question, error) {
	key := QuestionKey(text)
	if key == "" {
		return nil, errorf(Invalid, "text", "has no word that says what it asks (only stop words)")
	}
	var out *Question
	err := db.read(ctx, "find question", func(tx *txn) error {
		for _, ns := range chain {
			qs, err := findQuestionsTx(ctx, tx, `WHERE q.namespace = ? AND q.key = ? ORDER BY q.seq LIMIT 1`, ns, key)
			if err != nil {
				return err
			}
			if len(qs) == 0 {
				continue
			}
			if err := attachAnswersTx(ctx, tx, qs); err != nil {
				return err
			}
			out = qs[0]
			return nil
		}
		return errorf(NotFound, "text", "no question like it is recorded in this scope chain; declare it with memory_question_add")
	})
	return out, err
}

// DeclareQuestion declares the question text in namespace ns for client:
// the question with the same key there is marked declared (and keeps its
// first wording), or a new one is made. Either way it is audited, and the
// question comes back with its answer. It returns Invalid (Field "text")
// for a text with no meaningful word.
func (db *DB) DeclareQuestion(ctx context.Context, ns string, text screen.Text, client string) (*Question, error) {
	key := QuestionKey(text.String())
	if key == "" {
		return nil, errorf(Invalid, "text", "has no word that says what it asks (only stop words)")
	}
	var out *Question
	err := db.writeGrouped(ctx, opDeclareQuestion, func(tx *txn) error {
		seq, err := db.questionSeqTx(ctx, tx, ns, key, text.String())
		if err != nil {
			return err
		}
		if err := questions.Declare(ctx, tx, seq); err != nil {
			return err
		}
		qs, err := findQuestionsTx(ctx, tx, `WHERE q.seq = ?`, seq)
		if err != nil {
			return err
		}
		if err := attachAnswersTx(ctx, tx, qs); err != nil {
			return err
		}
		if err := insertAuditTx(ctx, tx, AuditEntry{
			Client: client, Action: ActionQuestionAdd, Namespace: ns, RecordID: qs[0].ID,
			Detail: screen.Redact(qs[0].Text),
		}); err != nil {
			return err
		}
		out = qs[0]
		return nil
	})
	return out, err
}

// questionSeqTx returns the seq of the question keyed key in ns, making it
// with wording text when there is none.
func (db *DB) questionSeqTx(ctx context.Context, tx *txn, ns, key, text string) (int64, error) {
	return questions.Seq(ctx, tx, db.newID, ns, key, text)
}

// findQuestionsTx returns the questions matching where (a clause over
// questions AS q), their answers not yet attached.
func findQuestionsTx(ctx context.Context, tx *txn, where string, args ...any) ([]*Question, error) {
	return questions.Find(ctx, tx, asQuestion, where, args...)
}

func questionByIDTx(ctx context.Context, tx *txn, id string) (*Question, error) {
	return questions.ByID(ctx, tx, asQuestion, id)
}

// Round4 rounds a reported figure (demand, used share) to 4 places.
func Round4(x float64) float64 { return questions.Round4(x) }
