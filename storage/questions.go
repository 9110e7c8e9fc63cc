package storage

import (
	"context"
	"database/sql"
	"math"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hearth-memory/hearth/storage/fulltext"
	"github.com/hearth-memory/hearth/storage/screen"
)

// ActionQuestionAdd: a client declared a question (memory_question_add).
const ActionQuestionAdd Action = "question-add"

// MaxQuestionChars bounds a question's stored text; longer wordings are cut
// (the key is made from the whole text first).
const MaxQuestionChars = 1000

// QuestionKey returns the normalised form that groups recorded queries into
// questions (docs/design.md R-W1). It is deterministic and made only from the text:
//
//  1. words are the runs of letters and digits, as full-text search splits
//     a query, lower-cased (case and punctuation aside);
//  2. stop words are dropped: the list full-text search drops;
//  3. each word becomes its Porter stem, the algorithm of the FTS5 porter
//     tokenizer, so "running", "runs" and "run" meet ("ran" does not);
//     words shorter than three letters, or holding anything but a-z, stay
//     as they are, as that tokenizer leaves them;
//  4. the first 32 distinct stems (the words a search sends to full text)
//     are sorted and joined by single spaces: word order aside.
//
// So "How do we run the migrations?" and "Running migrations" share the key
// "migrat run"; "Which Python version does CI use?" ("ci python us version")
// does not meet either. Synonyms stay apart. It returns "" for a text with
// no meaningful word, which is never recorded.
func QuestionKey(text string) string {
	words := strings.FieldsFunc(text, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	var stems []string
	for _, w := range words {
		w = strings.ToLower(w)
		if fulltext.IsStopword(w) {
			continue
		}
		s := fulltext.Stem(w)
		if slices.Contains(stems, s) {
			continue
		}
		stems = append(stems, s)
		if len(stems) == fulltext.MaxQueryTerms {
			break
		}
	}
	slices.Sort(stems)
	return strings.Join(stems, " ")
}

// questionText is how a wording is kept: whitespace runs as one space, at
// most MaxQuestionChars characters.
func questionText(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > MaxQuestionChars {
		s = string([]rune(s)[:MaxQuestionChars-1]) + "…"
	}
	return s
}

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
// or a declared question, with its figures (docs/design.md R-W1, R-W2).
type Question struct {
	ID        string
	Namespace string
	// Key is QuestionKey of the text; Text the first wording.
	Key, Text string
	// Declared is set once memory_question_add named it.
	Declared bool
	// Asks counts recorded searches; Used those whose full-text hits the
	// same session then fetched; Sessions and Clients the distinct ones
	// that asked.
	Asks, Used, Sessions, Clients int
	// Weight is the sessions weighed by client (SessionWeight of each
	// client's distinct sessions, summed).
	Weight float64
	// Demand is Weight × (1 − UsedShare()).
	Demand      float64
	CreatedAt   time.Time
	LastAskedAt time.Time // zero while never asked
	// Answer is the standing answer, nil while unanswered; its Stale is set
	// against the sources as they were read with the question.
	Answer *Answer

	seq int64 // the table key answers join on
}

// UsedShare is the share of asks whose hits were used, 0 with no asks.
func (q *Question) UsedShare() float64 {
	if q.Asks == 0 {
		return 0
	}
	return float64(q.Used) / float64(q.Asks)
}

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
const MaxClientSessions = 12

// SessionWeight is what one client's n distinct sessions add to a
// question's weight (docs/questions.md): 1, 1/2, 1/4, … for its first,
// second, third … session, up to MaxClientSessions, that is
// 2 − 2^(1−min(n, 12)); at 12 it is 1.9995, which still reads under 2 in
// the four places demand is reported to. One client adds less than 2 however many session
// ids it invents, so it never outranks two clients that each asked once
// (issue 41); within one client, more sessions still weigh more.
func SessionWeight(n int) float64 {
	if n <= 0 {
		return 0
	}
	return 2 - math.Ldexp(1, 1-min(n, MaxClientSessions))
}

// Demand is the documented demand formula (docs/design.md R-W2), the one the
// questions table computes in its demand column: the question's weight
// (SessionWeight summed over the clients that asked) × (1 − share of asks
// whose hits were used). 0 with no asks.
func Demand(asks, used int, weight float64) float64 {
	if asks <= 0 {
		return 0
	}
	return weight * (1 - float64(used)/float64(asks))
}

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
		if _, err := tx.ExecContext(ctx, `UPDATE questions SET declared = 1 WHERE seq = ?`, seq); err != nil {
			return classify("declare question", err)
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
	var seq int64
	err := tx.QueryRowContext(ctx, `SELECT seq FROM questions WHERE namespace = ? AND key = ? ORDER BY seq LIMIT 1`, ns, key).Scan(&seq)
	if err == nil {
		return seq, nil
	}
	if err != sql.ErrNoRows {
		return 0, classify("find question", err)
	}
	id, err := db.newID(tx.Now)
	if err != nil {
		return 0, err
	}
	err = tx.QueryRowContext(ctx, `INSERT INTO questions (id, namespace, key, text, created_at) VALUES (?, ?, ?, ?, ?) RETURNING seq`,
		id, ns, key, questionText(text), tx.Now.UnixMilli()).Scan(&seq)
	return seq, classify("new question", err)
}

const questionColumns = `q.seq, q.id, q.namespace, q.key, q.text, q.declared, q.asks, q.used, q.sessions, q.clients,
	q.weight, q.demand, q.created_at, q.last_asked_at`

// findQuestionsTx returns the questions matching where (a clause over
// questions AS q). The seq of each is kept for attachAnswersTx.
func findQuestionsTx(ctx context.Context, tx *txn, where string, args ...any) ([]*Question, error) {
	rows, err := tx.QueryContext(ctx, `SELECT `+questionColumns+` FROM questions AS q `+where, args...)
	if err != nil {
		return nil, classify("find questions", err)
	}
	defer rows.Close()
	var out []*Question
	for rows.Next() {
		var (
			q        Question
			seq      int64
			created  int64
			lastAsk  sql.NullInt64
			declared int
		)
		if err := rows.Scan(&seq, &q.ID, &q.Namespace, &q.Key, &q.Text, &declared, &q.Asks, &q.Used, &q.Sessions,
			&q.Clients, &q.Weight, &q.Demand, &created, &lastAsk); err != nil {
			return nil, classify("find questions", err)
		}
		q.Declared = declared != 0
		q.CreatedAt = time.UnixMilli(created).UTC()
		q.LastAskedAt = fromMS(lastAsk)
		q.seq = seq
		out = append(out, &q)
	}
	return out, classify("find questions", rows.Err())
}

func questionByIDTx(ctx context.Context, tx *txn, id string) (*Question, error) {
	qs, err := findQuestionsTx(ctx, tx, `WHERE q.id = ?`, id)
	if err != nil {
		return nil, err
	}
	if len(qs) == 0 {
		return nil, errorf(NotFound, "question_id", "no question has this id")
	}
	return qs[0], nil
}

// Round4 rounds a reported figure (demand, used share) to 4 places.
func Round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }
