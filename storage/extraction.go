package storage

import (
	"context"
	"encoding/json"
	"time"
	"unicode/utf8"

	"github.com/hearth-memory/hearth/storage/screen"
)

// Extraction receipt outcomes.
const (
	// ReceiptKept: the model's reply was read; its memories were stored or
	// refused one by one.
	ReceiptKept = "kept"
	// ReceiptUnparsable: a server replied, but no reply fit the schema (not
	// JSON, or not the shape asked for).
	ReceiptUnparsable = "unparsable"
	// ReceiptFailed: no server gave a reply (down, timed out, an HTTP error).
	ReceiptFailed = "failed"
)

// ReceiptOutcomes are the outcomes, in the order status and metrics name
// them.
var ReceiptOutcomes = []string{ReceiptKept, ReceiptUnparsable, ReceiptFailed}

// MaxReceiptReply caps the model's reply a receipt keeps, in bytes; a
// longer one is cut on a character boundary and marked.
const MaxReceiptReply = 64 << 10

// Refused is one memory of a reply that was not stored: its index in the
// reply and why (the screen's pattern, a rule, a repeat).
type Refused struct {
	Index  int    `json:"index"`
	Reason string `json:"reason"`
}

// NewExtractionReceipt is what an extraction writes of itself. Input and Reply have
// passed the screen (screen.Redact), so a secret in them is a placeholder.
type NewExtractionReceipt struct {
	JobID, Namespace, Client string
	Outcome                  string
	Server, Model            string
	Input, Reply             screen.Text
	Kept                     []string
	Refused                  []Refused
	Error                    screen.Text
	RerunOf                  string
}

// ExtractionReceipt is one stored extraction receipt.
type ExtractionReceipt struct {
	ID        string
	CreatedAt time.Time
	NewExtractionReceipt
}

const opStoreReceipt = "store extraction receipt"

// StoreExtractionReceipt writes a receipt in its own transaction: the receipt of an
// extraction that failed, whose job's completion writes nothing.
func (db *DB) StoreExtractionReceipt(ctx context.Context, nr NewExtractionReceipt) (string, error) {
	var id string
	err := db.writeGrouped(ctx, opStoreReceipt, func(tx *txn) (err error) {
		id, err = db.storeReceiptTx(ctx, tx, nr)
		return err
	})
	return id, err
}

// StoreExtractionReceipt writes a receipt inside the job's completion
// transaction.
func (t *JobTx) StoreExtractionReceipt(ctx context.Context, nr NewExtractionReceipt) (string, error) {
	return t.db.storeReceiptTx(ctx, t.tx, nr)
}

func (db *DB) storeReceiptTx(ctx context.Context, tx *txn, nr NewExtractionReceipt) (string, error) {
	id, err := db.newID(tx.Now)
	if err != nil {
		return "", err
	}
	reply := nr.Reply.String()
	if len(reply) > MaxReceiptReply {
		cut := MaxReceiptReply
		for cut > 0 && !utf8.RuneStart(reply[cut]) {
			cut--
		}
		reply = reply[:cut] + "…[cut]"
	}
	kept, _ := json.Marshal(nonNilStrings(nr.Kept))
	refused := nr.Refused
	if refused == nil {
		refused = []Refused{}
	}
	ref, _ := json.Marshal(refused)
	if _, err := tx.ExecContext(ctx, `
		INSERT INTO extraction_receipts (id, job_id, created_at, namespace, client, outcome, server, model, input, reply, kept, refused, error, rerun_of)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		id, nr.JobID, tx.Now.UnixMilli(), nr.Namespace, nr.Client, nr.Outcome, nr.Server, nr.Model,
		nr.Input.String(), reply, string(kept), string(ref), nr.Error.String(), nr.RerunOf); err != nil {
		return "", classify("store extraction receipt", err)
	}
	return id, nil
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// ExtractionReceipts returns the newest extraction receipts, newest first, at most
// limit; with id, only that one (NotFound, Field "id", when there is none).
func (db *DB) ExtractionReceipts(ctx context.Context, id string, limit int) ([]*ExtractionReceipt, error) {
	var out []*ExtractionReceipt
	err := db.read(ctx, "extraction receipts", func(tx *txn) error {
		q := `SELECT id, job_id, created_at, namespace, client, outcome, server, model, input, reply, kept, refused, error, rerun_of
			FROM extraction_receipts `
		args := []any{}
		if id != "" {
			q += `WHERE id = ?`
			args = append(args, id)
		} else {
			q += `ORDER BY created_at DESC, id DESC LIMIT +?`
			args = append(args, limit)
		}
		rows, err := tx.QueryContext(ctx, q, args...)
		if err != nil {
			return classify("extraction receipts", err)
		}
		defer rows.Close()
		for rows.Next() {
			var (
				r                             ExtractionReceipt
				at                            int64
				input, reply, kept, ref, errs string
			)
			if err := rows.Scan(&r.ID, &r.JobID, &at, &r.Namespace, &r.Client, &r.Outcome, &r.Server, &r.Model,
				&input, &reply, &kept, &ref, &errs, &r.RerunOf); err != nil {
				return classify("extraction receipts", err)
			}
			r.CreatedAt = time.UnixMilli(at).UTC()
			// Each was screened when it was written.
			r.Input, r.Reply, r.Error = screen.Redact(input), screen.Redact(reply), screen.Redact(errs)
			_ = json.Unmarshal([]byte(kept), &r.Kept)
			_ = json.Unmarshal([]byte(ref), &r.Refused)
			out = append(out, &r)
		}
		return classify("extraction receipts", rows.Err())
	})
	if err != nil {
		return nil, err
	}
	if id != "" && len(out) == 0 {
		return nil, errorf(NotFound, "id", "no extraction receipt has this id")
	}
	return out, nil
}

// ExtractionReceiptCounts counts the receipts kept by outcome.
func (db *DB) ExtractionReceiptCounts(ctx context.Context) (map[string]int, error) {
	out := map[string]int{}
	err := db.read(ctx, "extraction receipt counts", func(tx *txn) error {
		rows, err := tx.QueryContext(ctx, `SELECT outcome, COUNT(*) FROM extraction_receipts GROUP BY outcome`)
		if err != nil {
			return classify("extraction receipt counts", err)
		}
		defer rows.Close()
		for rows.Next() {
			var (
				o string
				n int
			)
			if err := rows.Scan(&o, &n); err != nil {
				return classify("extraction receipt counts", err)
			}
			out[o] = n
		}
		return classify("extraction receipt counts", rows.Err())
	})
	return out, err
}
