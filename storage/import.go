package storage

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/hearth-memory/hearth/storage/internal/anchors"
	"github.com/hearth-memory/hearth/storage/screen"
)

// ImportBatch is how many items one transaction of Import writes: a large
// import never holds the writer for long.
const ImportBatch = 200

// ImportItem is one record to import, its free text screened. Fields
// follow an exported record (ExportedRecord); what Import keeps of each
// depends on ImportOptions.AsActive.
type ImportItem struct {
	// ID is the record's id; "" gives it a new one.
	ID         string
	Namespace  string
	Type       string
	Title      screen.Text
	Content    screen.Text
	Confidence float64
	Topics     []screen.Text
	Anchors    []ImportAnchor
	Evidence   []ImportStance
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

// ImportAnchor is an anchor with its last check, as exported.
type ImportAnchor struct {
	Anchor    screen.Text
	State     string
	CheckedAt time.Time
	CheckedBy string
}

// ImportStance is a client's stance, as exported.
type ImportStance struct {
	Client string
	Stance string
	Note   screen.Text
	At     time.Time
}

// ImportOptions says how Import writes.
type ImportOptions struct {
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

// Import outcomes.
const (
	Imported  = "imported"
	Unchanged = "unchanged"
)

// ImportResult is the outcome of one item: Imported or Unchanged with the
// record's id, or the error that refused it (an *Error naming the item's
// field; nothing of the item was written).
type ImportResult struct {
	Outcome string
	ID      string
	Err     error
}

// Import writes items and returns one result per item, in order. It is
// idempotent by content: each item's digest (its id, namespace, type,
// title, content, confidence, topics and anchor names) is kept in the
// imports table, and an item whose digest is there, or whose id names a
// record with that very content, is Unchanged and writes nothing (not even
// an audit row). With AsActive the digest also covers the line's status,
// writer and evidence, and an untouched candidate that an import without
// AsActive made of the same line is replaced by the record as exported, so
// the earlier import never shadows it. An item whose id names a record with
// other content is refused (Exists, Field "id"). Each imported record gets its evidence
// (in the order given; the counts and effective confidence follow from
// it), its anchors and an audit row "import".
//
// Links (AsActive): a record's supersedes and superseded_by are set when
// the record at the other end exists (imported earlier, or earlier in the
// same import) and agrees; until then the link waits for the other end,
// whose import makes it. A link to a record that names another, or whose
// retired end is not superseded, is refused (Invalid, Field "supersedes"
// or "superseded_by").
//
// Items are written ImportBatch at a time, each batch in one transaction
// and each item under its own savepoint, so a refused item leaves the
// others. The error is for the import as a whole (an internal failure);
// the batches committed before it stay.
func (db *DB) Import(ctx context.Context, items []ImportItem, opt ImportOptions) ([]ImportResult, error) {
	if opt.Client == "" {
		return nil, errorf(Invalid, "client", "is required")
	}
	results := make([]ImportResult, len(items))
	for start := 0; start < len(items); start += ImportBatch {
		batch := items[start:min(len(items), start+ImportBatch)]
		var out []ImportResult
		err := db.writeGrouped(ctx, "import", func(tx *txn) error {
			res := make([]ImportResult, len(batch))
			for i := range batch {
				r, err := db.importOneTx(ctx, tx, &batch[i], opt)
				if err != nil && ErrorCode(err) == Internal {
					return err
				}
				r.Err = err
				res[i] = r
			}
			out = res
			return nil
		})
		if err != nil {
			return nil, err
		}
		copy(results[start:], out)
	}
	return results, nil
}

// importOneTx writes one item under a savepoint, rolled back when the item
// is refused.
func (db *DB) importOneTx(ctx context.Context, tx *txn, it *ImportItem, opt ImportOptions) (ImportResult, error) {
	if err := it.validate(opt); err != nil {
		return ImportResult{}, err
	}
	if _, err := tx.Tx.ExecContext(ctx, `SAVEPOINT import_item`); err != nil {
		return ImportResult{}, classify("import", err)
	}
	r, err := db.importTx(ctx, tx, it, opt)
	if err != nil {
		if _, rerr := tx.Tx.ExecContext(ctx, `ROLLBACK TO import_item`); rerr != nil {
			return ImportResult{}, classify("import", rerr)
		}
	}
	if _, rerr := tx.Tx.ExecContext(ctx, `RELEASE import_item`); rerr != nil {
		return ImportResult{}, classify("import", rerr)
	}
	return r, err
}

// CheckImportStatus refuses a status an imported record cannot have:
// deleted records are not imported. Invalid naming field.
func CheckImportStatus(field, s string) error {
	if s != StatusActive && s != StatusCandidate && s != StatusSuperseded {
		return errorf(Invalid, field, "must be %s, %s or %s", StatusActive, StatusCandidate, StatusSuperseded)
	}
	return nil
}

func (it *ImportItem) validate(opt ImportOptions) error {
	if err := checkRecord(it.Namespace, it.Type, it.Title, it.Content, it.Confidence); err != nil {
		return err
	}
	if err := CheckImportStatus("status", it.Status); err != nil {
		return err
	}
	switch {
	case it.Status == StatusSuperseded && !opt.AsActive:
		return errorf(Invalid, "status", "a superseded record is imported only with as_active (admin scope)")
	case it.Revision < 0:
		return errorf(Invalid, "revision", "must be at least 1")
	case opt.AsActive && it.Writer == "":
		return errorf(Invalid, "writer", "is required with as_active")
	case opt.AsActive && !ValidSource(it.Source):
		return CheckSource("source", it.Source)
	case it.Supersedes != "" && it.Supersedes == it.ID, it.SupersededBy != "" && it.SupersededBy == it.ID:
		return errorf(Invalid, "supersedes", "a record cannot supersede itself")
	}
	if err := screenNamespace(it.Namespace); err != nil {
		return err
	}
	if _, err := texts("topics", it.Topics); err != nil {
		return err
	}
	seen := make(map[string]bool, len(it.Anchors))
	for i, a := range it.Anchors {
		switch {
		case seen[a.Anchor.String()]:
			return errorf(Invalid, fmt.Sprintf("anchors[%d].anchor", i), "repeats an earlier anchor")
		case a.Anchor.String() == "":
			return errorf(Invalid, fmt.Sprintf("anchors[%d].anchor", i), "must not be empty")
		case a.State != AnchorUnknown && a.State != AnchorAvailable && a.State != AnchorUnavailable:
			return errorf(Invalid, fmt.Sprintf("anchors[%d].state", i), "must be unknown, available or unavailable")
		}
		seen[a.Anchor.String()] = true
	}
	for i, s := range it.Evidence {
		if s.Client == "" {
			return errorf(Invalid, fmt.Sprintf("evidence[%d].client", i), "is required")
		}
		if err := CheckStance(fmt.Sprintf("evidence[%d].stance", i), s.Stance); err != nil {
			return err
		}
	}
	return nil
}

// contentDigest is the import identity of a record: SHA-256 over its id
// (as the line gave it), namespace, type, title, content, confidence,
// topics and anchor names, in a fixed JSON form.
func contentDigest(id, ns, typ, title, content string, confidence float64, topics, anchors []string) string {
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

// importDigest is the imports table's key for an item of the given
// content digest: the content alone for an import as candidates (as it has
// always been), and with AsActive the content with the status, writer and
// evidence the line carries, so an import as exported is never taken for
// an earlier import of the same content as a candidate.
func importDigest(content string, it *ImportItem, opt ImportOptions) string {
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

// untouchedImport reports whether r is a candidate an import without
// as_active wrote and nothing has changed since (revision 1).
func untouchedImport(r *Record) bool {
	return r.Status == StatusCandidate && r.Source == SourceImport && r.Revision == 1
}

func (it *ImportItem) names() (topics, anchors []string) {
	topics, _ = texts("topics", it.Topics)
	for _, a := range it.Anchors {
		anchors = append(anchors, a.Anchor.String())
	}
	return topics, anchors
}

func (db *DB) importTx(ctx context.Context, tx *txn, it *ImportItem, opt ImportOptions) (ImportResult, error) {
	topics, anchorNames := it.names()
	content := contentDigest(it.ID, it.Namespace, it.Type, it.Title.String(), it.Content.String(), it.Confidence, topics, anchorNames)
	digest := importDigest(content, it, opt)
	var was string
	switch err := tx.QueryRowContext(ctx, `SELECT record_id FROM imports WHERE digest = ?`, digest).Scan(&was); {
	case err == nil:
		return ImportResult{Outcome: Unchanged, ID: was}, nil
	case err != sql.ErrNoRows:
		return ImportResult{}, classify("import", err)
	}
	id := it.ID
	if id != "" {
		cur, err := findRecordTx(ctx, tx, id)
		switch {
		case err == nil:
			if contentDigest(id, cur.Namespace, cur.Type, cur.Title, cur.Content, cur.Confidence, cur.Topics, anchorNamesOf(cur.Anchors)) != content {
				return ImportResult{}, errorf(Exists, "id", "a record with this id exists with other content (revision %d)", cur.Revision)
			}
			if !opt.AsActive || !untouchedImport(cur) || it.Status == StatusCandidate && it.Writer == cur.Writer && len(it.Evidence) == 0 {
				return ImportResult{Outcome: Unchanged, ID: id}, nil
			}
			// The candidate an earlier import without as_active made of
			// this very line, untouched since: the import as exported
			// replaces it, so that import does not shadow this one.
			if _, err := tx.ExecContext(ctx, `DELETE FROM records WHERE id = ?`, id); err != nil {
				return ImportResult{}, classify("import", err)
			}
		case ErrorCode(err) != NotFound:
			return ImportResult{}, err
		}
	} else {
		var err error
		if id, err = db.newID(tx.Now); err != nil {
			return ImportResult{}, err
		}
	}

	// Without AsActive a line's claimed creation time is not kept either:
	// the candidate is the importer's, made now (issue #41).
	status, revision, writer, source := StatusCandidate, 1, opt.Client, SourceImport
	created, updated := tx.Now, tx.Now
	anchors := make([]Anchor, len(anchorNames))
	for i, a := range it.Anchors {
		anchors[i] = Anchor{Anchor: a.Anchor.String(), State: AnchorUnknown}
		if opt.AsActive {
			anchors[i].State, anchors[i].CheckedAt, anchors[i].CheckedBy = a.State, a.CheckedAt, a.CheckedBy
		}
	}
	if opt.AsActive {
		status, revision, writer, source, updated = it.Status, max(1, it.Revision), it.Writer, it.Source, it.UpdatedAt
		if !it.CreatedAt.IsZero() {
			created = it.CreatedAt
		}
	}
	if updated.IsZero() {
		updated = created
	}
	if _, err := tx.ExecContext(ctx, `
		INSERT INTO records (
			id, namespace, type, title, content, status, revision, writer,
			confidence, effective_confidence, topics, source, created_at, updated_at
		) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		id, it.Namespace, it.Type, it.Title.String(), it.Content.String(), status, revision, writer,
		it.Confidence, it.Confidence, topicsJSON(topics), source, created.UnixMilli(), updated.UnixMilli(),
	); err != nil {
		return ImportResult{}, classify("import", err)
	}
	if err := insertAnchorsTx(ctx, tx, id, anchors); err != nil {
		return ImportResult{}, err
	}
	// Evidence is kept only as exported (AsActive, admin scope): a line's
	// stances claim other clients and times, which a writer importing
	// candidates must not be able to forge (issue #41). Without AsActive
	// they are dropped, and the audit row says how many.
	if opt.AsActive && len(it.Evidence) > 0 {
		for _, s := range it.Evidence {
			at := s.At
			if at.IsZero() {
				at = tx.Now
			}
			if _, err := tx.ExecContext(ctx, `
				INSERT INTO evidence (record_id, client, stance, note, at) VALUES (?, ?, ?, ?, ?)
				ON CONFLICT (record_id, client) DO UPDATE SET stance = excluded.stance, note = excluded.note, at = excluded.at`,
				id, s.Client, s.Stance, s.Note.String(), at.UnixMilli(),
			); err != nil {
				return ImportResult{}, classify("import evidence", err)
			}
		}
		w, err := witnessTx(ctx, tx, id, writer, it.Confidence)
		if err != nil {
			return ImportResult{}, err
		}
		if _, err := tx.ExecContext(ctx, `
			UPDATE records SET effective_confidence = ?, proof_count = ?, refutation_count = ? WHERE id = ?`,
			w.effective, w.proofs, w.refutations, id,
		); err != nil {
			return ImportResult{}, classify("import", err)
		}
	}
	if opt.AsActive {
		if err := linkImportTx(ctx, tx, id, it); err != nil {
			return ImportResult{}, err
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO imports (digest, record_id, client, at) VALUES (?, ?, ?, ?)`,
		digest, id, opt.Client, tx.Now.UnixMilli()); err != nil {
		return ImportResult{}, classify("import", err)
	}
	mode := "as candidate"
	if opt.AsActive {
		mode = "as exported"
	} else if len(it.Evidence) > 0 {
		mode += fmt.Sprintf(", %d evidence stances dropped (kept only as exported)", len(it.Evidence))
	}
	if err := insertAuditTx(ctx, tx, AuditEntry{
		Client: opt.Client, Action: ActionImport, Namespace: it.Namespace, RecordID: id,
		Detail: screen.Redact(it.Type + " " + status + " " + mode),
	}); err != nil {
		return ImportResult{}, err
	}
	return ImportResult{Outcome: Imported, ID: id}, nil
}

// linkImportTx makes the supersession links of an imported record whose
// other end exists and agrees.
func linkImportTx(ctx context.Context, tx *txn, id string, it *ImportItem) error {
	link := func(field, older, newer, other string) error {
		var ns, status string
		var sup, supBy sql.NullString
		err := tx.QueryRowContext(ctx, `SELECT namespace, status, supersedes, superseded_by FROM records WHERE id = ?`, other).Scan(&ns, &status, &sup, &supBy)
		if err == sql.ErrNoRows {
			return nil // the other end links when it arrives
		} else if err != nil {
			return classify("import link", err)
		}
		if ns != it.Namespace {
			return errorf(Invalid, field, "%s is in another namespace (%s)", other, ns)
		}
		// The retired end must say so: a link never leaves an active
		// record with a successor.
		olderStatus := it.Status
		if other == older {
			olderStatus = status
		}
		if olderStatus != StatusSuperseded {
			return errorf(Invalid, field, "%s is %s, not superseded", older, olderStatus)
		}
		// The other end must name this record, or nothing yet.
		theirs := sup
		if other == older {
			theirs = supBy
		}
		if theirs.Valid && theirs.String != id {
			return errorf(Invalid, field, "%s is linked to another record (%s)", other, theirs.String)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE records SET superseded_by = ? WHERE id = ?`, newer, older); err != nil {
			return classify("import link", err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE records SET supersedes = ? WHERE id = ?`, older, newer); err != nil {
			return classify("import link", err)
		}
		return nil
	}
	if it.Supersedes != "" {
		if err := link("supersedes", it.Supersedes, id, it.Supersedes); err != nil {
			return err
		}
	}
	if it.SupersededBy != "" {
		if err := link("superseded_by", id, it.SupersededBy, it.SupersededBy); err != nil {
			return err
		}
	}
	return nil
}

func anchorNamesOf(as []Anchor) []string {
	if len(as) == 0 {
		return nil
	}
	return anchors.Names(as)
}
