// Package questions is the vocabulary of questions and their demand
// (docs/design.md §14, R-W1, R-W2): the key that groups recorded queries
// into questions, how a wording is kept, the weight and demand formulas,
// and the rows of the questions table, read and made in the engine's
// transaction. The standing answer a question carries is the record
// domain's (package storage), which joins it on Row.Seq.
package questions

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
	"github.com/hearth-memory/hearth/storage/internal/engine"
	"github.com/hearth-memory/hearth/storage/internal/errs"
)

// MaxChars bounds a question's stored text; longer wordings are cut (the
// key is made from the whole text first).
const MaxChars = 1000

// Key returns the normalised form that groups recorded queries into
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
func Key(text string) string {
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

// Text is how a wording is kept: whitespace runs as one space, at most
// MaxChars characters.
func Text(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > MaxChars {
		s = string([]rune(s)[:MaxChars-1]) + "…"
	}
	return s
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

// Round4 rounds a reported figure (demand, used share) to 4 places.
func Round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }

// Row is a question as its table keeps it: a group of recorded queries
// sharing a key within a namespace, or a declared question, with its
// figures (docs/design.md R-W1, R-W2).
type Row struct {
	ID        string
	Namespace string
	// Key is Key of the text; Text the first wording.
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

	// Seq is the table key answers and recorded asks join on; it never
	// leaves the store.
	Seq int64
}

// UsedShare is the share of asks whose hits were used, 0 with no asks.
func (q *Row) UsedShare() float64 {
	if q.Asks == 0 {
		return 0
	}
	return float64(q.Used) / float64(q.Asks)
}

const columns = `q.seq, q.id, q.namespace, q.key, q.text, q.declared, q.asks, q.used, q.sessions, q.clients,
	q.weight, q.demand, q.created_at, q.last_asked_at`

// Find returns the questions matching where (a clause over questions AS q,
// with its args), each made by wrap from its row.
func Find[Q any](ctx context.Context, tx *engine.Tx, wrap func(Row) Q, where string, args ...any) ([]Q, error) {
	rows, err := tx.QueryContext(ctx, `SELECT `+columns+` FROM questions AS q `+where, args...)
	if err != nil {
		return nil, errs.Classify("find questions", err)
	}
	defer rows.Close()
	var out []Q
	for rows.Next() {
		var (
			q        Row
			created  int64
			lastAsk  sql.NullInt64
			declared int
		)
		if err := rows.Scan(&q.Seq, &q.ID, &q.Namespace, &q.Key, &q.Text, &declared, &q.Asks, &q.Used, &q.Sessions,
			&q.Clients, &q.Weight, &q.Demand, &created, &lastAsk); err != nil {
			return nil, errs.Classify("find questions", err)
		}
		q.Declared = declared != 0
		q.CreatedAt = time.UnixMilli(created).UTC()
		if lastAsk.Valid {
			q.LastAskedAt = time.UnixMilli(lastAsk.Int64).UTC()
		}
		out = append(out, wrap(q))
	}
	return out, errs.Classify("find questions", rows.Err())
}

// ByID returns the question id, made by wrap. It returns NotFound (Field
// "question_id") for an unknown id.
func ByID[Q any](ctx context.Context, tx *engine.Tx, wrap func(Row) Q, id string) (Q, error) {
	qs, err := Find(ctx, tx, wrap, `WHERE q.id = ?`, id)
	if err != nil || len(qs) == 0 {
		var none Q
		if err == nil {
			err = errs.Errorf(errs.NotFound, "question_id", "no question has this id")
		}
		return none, err
	}
	return qs[0], nil
}

// Seq returns the seq of the question keyed key in ns, making it with
// wording text, and an id from newID, when there is none.
func Seq(ctx context.Context, tx *engine.Tx, newID func(time.Time) (string, error), ns, key, text string) (int64, error) {
	var seq int64
	err := tx.QueryRowContext(ctx, `SELECT seq FROM questions WHERE namespace = ? AND key = ? ORDER BY seq LIMIT 1`, ns, key).Scan(&seq)
	if err == nil {
		return seq, nil
	}
	if err != sql.ErrNoRows {
		return 0, errs.Classify("find question", err)
	}
	id, err := newID(tx.Now)
	if err != nil {
		return 0, err
	}
	err = tx.QueryRowContext(ctx, `INSERT INTO questions (id, namespace, key, text, created_at) VALUES (?, ?, ?, ?, ?) RETURNING seq`,
		id, ns, key, Text(text), tx.Now.UnixMilli()).Scan(&seq)
	return seq, errs.Classify("new question", err)
}

// Declare marks the question seq declared.
func Declare(ctx context.Context, tx *engine.Tx, seq int64) error {
	_, err := tx.ExecContext(ctx, `UPDATE questions SET declared = 1 WHERE seq = ?`, seq)
	return errs.Classify("declare question", err)
}
