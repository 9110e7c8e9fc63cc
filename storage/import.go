package storage

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/hearth-memory/hearth/storage/internal/anchors"
	"github.com/hearth-memory/hearth/storage/internal/imports"
	"github.com/hearth-memory/hearth/storage/screen"
)

// ImportBatch is how many items one transaction of Import writes: a large
// import never holds the writer for long.
const ImportBatch = imports.Batch

// What an import is made of (package imports says what each field keeps).
type (
	// ImportItem is one record to import, its free text screened.
	ImportItem = imports.Item
	// ImportAnchor is an anchor with its last check, as exported.
	ImportAnchor = imports.Anchor
	// ImportStance is a client's stance, as exported.
	ImportStance = imports.Stance
	// ImportOptions says how Import writes.
	ImportOptions = imports.Options
	// ImportResult is the outcome of one item: Imported or Unchanged with
	// the record's id, or the error that refused it.
	ImportResult = imports.Result
)

// Import outcomes.
const (
	Imported  = imports.Imported
	Unchanged = imports.Unchanged
)

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
				r.Err = lift(err) // a refusal made below the root, as storage's Error
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
	if err := validateImport(it, opt); err != nil {
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

// validateImport refuses an item the record rules or opt do not allow.
func validateImport(it *ImportItem, opt ImportOptions) error {
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

// untouchedImport reports whether r is a candidate an import without
// as_active wrote and nothing has changed since (revision 1).
func untouchedImport(r *Record) bool {
	return r.Status == StatusCandidate && r.Source == SourceImport && r.Revision == 1
}

// importNames are the item's distinct topics and its anchors' names.
func importNames(it *ImportItem) (topics, anchors []string) {
	topics, _ = texts("topics", it.Topics)
	for _, a := range it.Anchors {
		anchors = append(anchors, a.Anchor.String())
	}
	return topics, anchors
}

func (db *DB) importTx(ctx context.Context, tx *txn, it *ImportItem, opt ImportOptions) (ImportResult, error) {
	topics, anchorNames := importNames(it)
	content := imports.ContentDigest(it.ID, it.Namespace, it.Type, it.Title.String(), it.Content.String(), it.Confidence, topics, anchorNames)
	digest := it.Digest(content, opt)
	switch was, ok, err := imports.Seen(ctx, tx, digest); {
	case err != nil:
		return ImportResult{}, err
	case ok:
		return ImportResult{Outcome: Unchanged, ID: was}, nil
	}
	id := it.ID
	if id != "" {
		cur, err := findRecordTx(ctx, tx, id)
		switch {
		case err == nil:
			if imports.ContentDigest(id, cur.Namespace, cur.Type, cur.Title, cur.Content, cur.Confidence, cur.Topics, anchorNamesOf(cur.Anchors)) != content {
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
	if err := imports.Keep(ctx, tx, digest, id, opt.Client); err != nil {
		return ImportResult{}, err
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
