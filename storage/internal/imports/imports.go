// Package imports is what an import of records is made of (docs/design.md
// §6, memory_import): the items as an export gives them, the options and
// outcomes, and an item's identity, the digest the imports table keeps so
// that importing the same line again writes nothing. How an item becomes a
// record (its rules, evidence, anchors and links) is the record domain's
// (package storage).
package imports

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"time"

	"github.com/hearth-memory/hearth/storage/internal/engine"
	"github.com/hearth-memory/hearth/storage/internal/errs"
	"github.com/hearth-memory/hearth/storage/screen"
)

// Batch is how many items one transaction of an import writes: a large
// import never holds the writer for long.
const Batch = 200

// Item is one record to import, its free text screened. Fields follow an
// exported record (storage.ExportedRecord); what an import keeps of each
// depends on Options.AsActive.
type Item struct {
	// ID is the record's id; "" gives it a new one.
	ID         string
	Namespace  string
	Type       string
	Title      screen.Text
	Content    screen.Text
	Confidence float64
	Topics     []screen.Text
	Anchors    []Anchor
	Evidence   []Stance
	// Status is active, candidate or superseded.
	Status string
	// Revision, Writer, Source, CreatedAt and UpdatedAt are kept with
	// AsActive only; Revision 0 means 1.
	Revision  int
	Writer    string
	Source    string
	CreatedAt time.Time
	UpdatedAt time.Time
	// Supersedes and SupersededBy are linked with AsActive only.
	Supersedes   string
	SupersededBy string
}

// Anchor is an anchor with its last check, as exported.
type Anchor struct {
	Anchor    screen.Text
	State     string
	CheckedAt time.Time
	CheckedBy string
}

// Stance is a client's stance, as exported.
type Stance struct {
	Client string
	Stance string
	Note   screen.Text
	At     time.Time
}

// Options says how an import writes.
type Options struct {
	// Client is the importing client: it is audited, and it is the writer
	// of records imported as candidates.
	Client string
	// AsActive writes each record as it was exported: its status (active,
	// candidate or superseded), revision, writer, source, times, anchor
	// checks and supersession links. Otherwise every record is written as
	// a candidate at revision 1 with source import, the importing client
	// as writer, its anchors unchecked, no links and no evidence (a line's
	// stances are dropped: they claim other clients), and a superseded
	// record is refused.
	AsActive bool
}

// The outcomes of an item.
const (
	Imported  = "imported"
	Unchanged = "unchanged"
)

// Result is the outcome of one item: Imported or Unchanged with the
// record's id, or the error that refused it (storage's *Error naming the item's
// field; nothing of the item was written).
type Result struct {
	Outcome string
	ID      string
	Err     error
}

// ContentDigest is the import identity of a record: SHA-256 over its id
// (as the line gave it), namespace, type, title, content, confidence,
// topics and anchor names, in a fixed JSON form.
func ContentDigest(id, ns, typ, title, content string, confidence float64, topics, anchors []string) string {
	if topics == nil {
		topics = []string{}
	}
	if anchors == nil {
		anchors = []string{}
	}
	b, _ := json.Marshal([]any{"hearth-import-v1", id, ns, typ, title, content,
		strconv.FormatFloat(confidence, 'g', -1, 64), topics, anchors}) // strings and lists always marshal
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Digest is the imports table's key for it, of the given content digest
// (ContentDigest): the content alone for an import as candidates (as it has
// always been), and with AsActive the content with the status, writer and
// evidence the line carries, so an import as exported is never taken for
// an earlier import of the same content as a candidate.
func (it *Item) Digest(content string, opt Options) string {
	if !opt.AsActive {
		return content
	}
	stances := make([]string, 0, 4*len(it.Evidence))
	for _, s := range it.Evidence {
		stances = append(stances, s.Client, s.Stance, s.Note.String(), strconv.FormatInt(s.At.UnixMilli(), 10))
	}
	b, _ := json.Marshal([]any{"hearth-import-as-exported-v1", content, it.Status, it.Writer, stances}) // strings always marshal
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Seen returns the record an earlier import of digest wrote; ok is false
// when there was none.
func Seen(ctx context.Context, tx *engine.Tx, digest string) (recordID string, ok bool, err error) {
	switch err := tx.QueryRowContext(ctx, `SELECT record_id FROM imports WHERE digest = ?`, digest).Scan(&recordID); {
	case err == sql.ErrNoRows:
		return "", false, nil
	case err != nil:
		return "", false, errs.Classify("import", err)
	}
	return recordID, true, nil
}

// Keep remembers that client imported digest as the record recordID.
func Keep(ctx context.Context, tx *engine.Tx, digest, recordID, client string) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO imports (digest, record_id, client, at) VALUES (?, ?, ?, ?)`,
		digest, recordID, client, tx.Now.UnixMilli())
	return errs.Classify("import", err)
}
