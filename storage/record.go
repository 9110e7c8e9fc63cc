package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hearth-memory/hearth/storage/screen"
)

// Record types (SPEC R-R2). The first five are durable.
const (
	TypeDecision    = "decision"
	TypeConstraint  = "constraint"
	TypeRequirement = "requirement"
	TypeProcedure   = "procedure"
	TypePreference  = "preference"
	TypeNote        = "note"
	TypeSummary     = "summary"
)

// Types lists every record type, durable ones first.
var Types = []string{
	TypeDecision, TypeConstraint, TypeRequirement, TypeProcedure, TypePreference,
	TypeNote, TypeSummary,
}

// ValidType reports whether t is a record type.
func ValidType(t string) bool { return slices.Contains(Types, t) }

// IsDurable reports whether records of type t are durable knowledge (decision,
// constraint, requirement, procedure, preference) rather than notes or summaries.
func IsDurable(t string) bool {
	switch t {
	case TypeDecision, TypeConstraint, TypeRequirement, TypeProcedure, TypePreference:
		return true
	}
	return false
}

// Record statuses (SPEC R-R3). Active and candidate records are live.
const (
	StatusActive     = "active"
	StatusCandidate  = "candidate"
	StatusSuperseded = "superseded"
	StatusDeleted    = "deleted"
)

// ValidStatus reports whether s is a record status.
func ValidStatus(s string) bool {
	switch s {
	case StatusActive, StatusCandidate, StatusSuperseded, StatusDeleted:
		return true
	}
	return false
}

// Record sources (SPEC R-R1): how a record came to be.
const (
	SourceStore      = "store"
	SourceExtraction = "extraction"
	SourceImport     = "import"
	SourceSession    = "session"
)

// ValidSource reports whether s is a record source.
func ValidSource(s string) bool {
	switch s {
	case SourceStore, SourceExtraction, SourceImport, SourceSession:
		return true
	}
	return false
}

// Anchor states (SPEC R-H1). New anchors are unknown until checked.
const (
	AnchorUnknown     = "unknown"
	AnchorAvailable   = "available"
	AnchorUnavailable = "unavailable"
)

// Audit actions storage writes with its mutations.
const (
	ActionStore     = "store"
	ActionUpdate    = "update"
	ActionForget    = "forget"
	ActionSupersede = "supersede"
)

// Record is one memory as stored.
type Record struct {
	ID                  string
	Namespace           string
	Type                string
	Title               string
	Content             string
	Status              string
	Revision            int
	Writer              string
	Confidence          float64 // asserted, in (0, 1]
	EffectiveConfidence float64 // derived from Confidence and the evidence counts
	ProofCount          int
	RefutationCount     int
	Supersedes          string // id of the record this one retired, or ""
	SupersededBy        string // id of the record that retired this one, or ""
	Anchors             []Anchor
	Topics              []string
	Source              string
	CreatedAt           time.Time
	UpdatedAt           time.Time
}

// Live reports whether the record can be returned by search (active or candidate).
func (r *Record) Live() bool {
	return r.Status == StatusActive || r.Status == StatusCandidate
}

// Anchor is a thing a record depends on, such as "path:src/x.go", with its
// last check. CheckedAt is zero when it was never checked.
type Anchor struct {
	Anchor    string
	State     string
	CheckedAt time.Time
	CheckedBy string
}

// NewRecord is what Store writes. Status is decided by the caller (active for
// memory_store, candidate for extraction and import). Confidence is required
// and must be in (0, 1]; the server fills in its default.
type NewRecord struct {
	Namespace  string
	Type       string
	Title      screen.Text
	Content    screen.Text
	Confidence float64
	Topics     []screen.Text
	Anchors    []screen.Text
	Supersedes string // id of an active record to retire, or ""
	Writer     string
	Source     string
	Status     string
}

// Changes lists what Update changes; nil fields stay as they are. Topics and
// Anchors replace the whole list.
type Changes struct {
	Title      *screen.Text
	Content    *screen.Text
	Type       *string
	Status     *string // active or candidate only
	Confidence *float64
	Topics     *[]screen.Text
	Anchors    *[]screen.Text
	Supersedes *string // id of an active record to retire
}

func (ch *Changes) empty() bool {
	return ch.Title == nil && ch.Content == nil && ch.Type == nil && ch.Status == nil &&
		ch.Confidence == nil && ch.Topics == nil && ch.Anchors == nil && ch.Supersedes == nil
}

// Store writes a new record at revision 1 with its anchors (state unknown) and
// an audit row, and, when Supersedes is set, retires that record in the same
// transaction. It returns the record as stored.
//
// It returns Invalid for a missing or out-of-enum field (Field names it), a
// confidence outside (0, 1], or a refused supersession (Field "supersedes");
// NotFound (Field "supersedes") when the record to supersede does not exist.
// A refusal writes nothing.
func (db *DB) Store(ctx context.Context, nr NewRecord) (*Record, error) {
	if err := nr.validate(); err != nil {
		return nil, err
	}
	var rec *Record
	if err := db.write(ctx, "store", func(tx *txn) (err error) {
		rec, err = db.storeTx(ctx, tx, nr)
		return err
	}); err != nil {
		return nil, err
	}
	return rec, nil
}

func (nr *NewRecord) validate() error {
	switch {
	case nr.Namespace == "":
		return errorf(Invalid, "namespace", "is required")
	case !ValidType(nr.Type):
		return errorf(Invalid, "type", "must be one of %s", strings.Join(Types, ", "))
	case nr.Title.String() == "":
		return errorf(Invalid, "title", "is required")
	case nr.Content.String() == "":
		return errorf(Invalid, "content", "is required")
	case !validConfidence(nr.Confidence):
		return errorf(Invalid, "confidence", "must be greater than 0 and at most 1")
	case nr.Writer == "":
		return errorf(Invalid, "writer", "is required")
	case !ValidSource(nr.Source):
		return errorf(Invalid, "source", "must be one of store, extraction, import, session")
	case nr.Status != StatusActive && nr.Status != StatusCandidate:
		return errorf(Invalid, "status", "a new record is active or candidate")
	}
	if err := screenNamespace(nr.Namespace); err != nil {
		return err
	}
	if _, err := texts("topics", nr.Topics); err != nil {
		return err
	}
	if _, err := texts("anchors", nr.Anchors); err != nil {
		return err
	}
	return nil
}

// screenNamespace refuses a namespace that screens as a secret. Namespaces
// are plain strings in this package (their charset is narrow), but one like
// projects/do-not-store must still never be written. It returns Invalid
// naming the field and the pattern.
func screenNamespace(ns string) error {
	if _, err := screen.Check("namespace", ns); err != nil {
		var ref *screen.Refusal
		if errors.As(err, &ref) {
			return errorf(Invalid, "namespace", "refused: looks like a secret (pattern %s)", ref.Pattern)
		}
		return err
	}
	return nil
}

// storeTx inserts a validated record and returns it as stored.
func (db *DB) storeTx(ctx context.Context, tx *txn, nr NewRecord) (*Record, error) {
	id, err := db.newID(tx.now)
	if err != nil {
		return nil, err
	}
	topics, _ := texts("topics", nr.Topics)
	anchors, _ := texts("anchors", nr.Anchors)
	now := tx.now.UnixMilli()
	if _, err := tx.ExecContext(ctx, `
		INSERT INTO records (
			id, namespace, type, title, content, status, revision, writer,
			confidence, effective_confidence, topics, source, created_at, updated_at
		) VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?, ?, ?, ?)`,
		id, nr.Namespace, nr.Type, nr.Title.String(), nr.Content.String(), nr.Status, nr.Writer,
		nr.Confidence, nr.Confidence, topicsJSON(topics), nr.Source, now, now,
	); err != nil {
		return nil, classify("store", err)
	}
	newAnchors := make([]Anchor, len(anchors))
	for i, a := range anchors {
		newAnchors[i] = Anchor{Anchor: a, State: AnchorUnknown}
	}
	if err := insertAnchorsTx(ctx, tx, id, newAnchors); err != nil {
		return nil, err
	}
	if err := insertAuditTx(ctx, tx, AuditEntry{
		Client: nr.Writer, Action: ActionStore, Namespace: nr.Namespace, RecordID: id,
		Detail: screen.Redact(nr.Type + " " + nr.Status),
	}); err != nil {
		return nil, err
	}
	rec := &Record{
		ID: id, Namespace: nr.Namespace, Type: nr.Type, Title: nr.Title.String(), Content: nr.Content.String(),
		Status: nr.Status, Revision: 1, Writer: nr.Writer, Confidence: nr.Confidence, EffectiveConfidence: nr.Confidence,
		Anchors: newAnchors, Topics: topics, Source: nr.Source, CreatedAt: tx.now, UpdatedAt: tx.now,
	}
	if len(rec.Anchors) == 0 {
		rec.Anchors = nil
	}
	if len(rec.Topics) == 0 {
		rec.Topics = nil
	}
	if nr.Supersedes != "" {
		if err := supersedeTx(ctx, tx, rec, nr.Supersedes, "supersedes", nr.Writer); err != nil {
			return nil, err
		}
		rec.Supersedes = nr.Supersedes
	}
	// Built here rather than read back: Store is the hot path of imports and
	// extraction, and TestDB_Store holds that Get returns the same record.
	return rec, nil
}

// Update applies ch to the record id if it is still at revision, advancing
// the revision by one and writing an audit row; a status change applies before
// a supersession, so one call may activate a candidate and let it supersede.
// Giving values equal to the current ones changes nothing: the record comes
// back at the same revision.
//
// It returns NotFound (Field "id") for an unknown record and NotFound (Field
// "changes.supersedes") for an unknown record to supersede; Conflict, with
// Current set, when revision is stale; Invalid when ch is empty or holds a bad
// value (Field "changes.<name>"), when the record is superseded or deleted
// (Field "id"), or when the supersession is refused. A refusal writes nothing.
func (db *DB) Update(ctx context.Context, id string, revision int, ch Changes, client string) (*Record, error) {
	if ch.empty() {
		return nil, errorf(Invalid, "changes", "names nothing to change")
	}
	var rec *Record
	if err := db.write(ctx, "update", func(tx *txn) (err error) {
		rec, err = updateTx(ctx, tx, id, revision, ch, client)
		return err
	}); err != nil {
		return nil, err
	}
	return rec, nil
}

func updateTx(ctx context.Context, tx *txn, id string, revision int, ch Changes, client string) (*Record, error) {
	cur, err := findRecordTx(ctx, tx, id)
	if err != nil {
		return nil, err
	}
	if cur.Revision != revision {
		return nil, conflict(cur, revision)
	}
	if !cur.Live() {
		return nil, errorf(Invalid, "id", "record is %s; only active and candidate records can be updated", cur.Status)
	}

	next := *cur
	var changed []string
	if ch.Title != nil {
		if next.Title = ch.Title.String(); next.Title == "" {
			return nil, errorf(Invalid, "changes.title", "must not be empty")
		} else if next.Title != cur.Title {
			changed = append(changed, "title")
		}
	}
	if ch.Content != nil {
		if next.Content = ch.Content.String(); next.Content == "" {
			return nil, errorf(Invalid, "changes.content", "must not be empty")
		} else if next.Content != cur.Content {
			changed = append(changed, "content")
		}
	}
	if ch.Type != nil {
		if next.Type = *ch.Type; !ValidType(next.Type) {
			return nil, errorf(Invalid, "changes.type", "must be one of %s", strings.Join(Types, ", "))
		} else if next.Type != cur.Type {
			changed = append(changed, fmt.Sprintf("type (%s→%s)", cur.Type, next.Type))
		}
	}
	if ch.Status != nil {
		if next.Status = *ch.Status; next.Status != StatusActive && next.Status != StatusCandidate {
			return nil, errorf(Invalid, "changes.status",
				"can only move between active and candidate (supersession retires a record, forget deletes it)")
		} else if next.Status != cur.Status {
			changed = append(changed, fmt.Sprintf("status (%s→%s)", cur.Status, next.Status))
		}
	}
	if ch.Confidence != nil {
		if next.Confidence = *ch.Confidence; !validConfidence(next.Confidence) {
			return nil, errorf(Invalid, "changes.confidence", "must be greater than 0 and at most 1")
		} else if next.Confidence != cur.Confidence {
			// The evidence stays; it now applies to the new assertion.
			w, err := witnessTx(ctx, tx, id, cur.Writer, next.Confidence)
			if err != nil {
				return nil, err
			}
			next.EffectiveConfidence = w.effective
			changed = append(changed, "confidence")
		}
	}
	if ch.Topics != nil {
		if next.Topics, err = texts("changes.topics", *ch.Topics); err != nil {
			return nil, err
		} else if !slices.Equal(next.Topics, cur.Topics) {
			changed = append(changed, "topics")
		}
	}
	anchorsChanged := false
	if ch.Anchors != nil {
		names, err := texts("changes.anchors", *ch.Anchors)
		if err != nil {
			return nil, err
		}
		next.Anchors = keepAnchorStates(cur.Anchors, names)
		if anchorsChanged = !slices.Equal(names, anchorNames(cur.Anchors)); anchorsChanged {
			changed = append(changed, "anchors")
		}
	}
	supersede := ""
	if ch.Supersedes != nil {
		switch s := *ch.Supersedes; {
		case s == "":
			return nil, errorf(Invalid, "changes.supersedes", "must name a record")
		case s == cur.Supersedes:
			// Already done: nothing to change.
		case cur.Supersedes != "":
			return nil, errorf(Invalid, "changes.supersedes", "record already supersedes %s", cur.Supersedes)
		default:
			supersede = s
			changed = append(changed, "supersedes")
		}
	}
	if len(changed) == 0 {
		return cur, nil
	}

	// The FTS trigger fires only when title or content differ, so setting
	// them to what they were does not reindex.
	if _, err := tx.ExecContext(ctx, `
		UPDATE records SET
			title = ?, content = ?, type = ?, status = ?, confidence = ?,
			effective_confidence = ?, topics = ?, revision = revision + 1, updated_at = ?
		WHERE id = ?`,
		next.Title, next.Content, next.Type, next.Status, next.Confidence,
		next.EffectiveConfidence, topicsJSON(next.Topics), tx.now.UnixMilli(), id,
	); err != nil {
		return nil, classify("update", err)
	}
	if anchorsChanged {
		if _, err := tx.ExecContext(ctx, `DELETE FROM anchors WHERE record_id = ?`, id); err != nil {
			return nil, classify("update", err)
		}
		if err := insertAnchorsTx(ctx, tx, id, next.Anchors); err != nil {
			return nil, err
		}
	}
	if err := insertAuditTx(ctx, tx, AuditEntry{
		Client: client, Action: ActionUpdate, Namespace: cur.Namespace, RecordID: id,
		Detail: screen.Redact("changed " + strings.Join(changed, ", ")),
	}); err != nil {
		return nil, err
	}
	if supersede != "" {
		if err := supersedeTx(ctx, tx, &next, supersede, "changes.supersedes", client); err != nil {
			return nil, err
		}
	}
	return findRecordTx(ctx, tx, id)
}

// Forget marks the record id deleted, advancing its revision, with reason in
// the audit row. A revision of 0 forgets whatever the current revision is.
// A record it superseded stays superseded. Deleted records stay in the table
// (and the full-text index) until purged, but search and timeline skip them.
//
// It returns NotFound (Field "id") for an unknown record, Conflict (with
// Current) when a non-zero revision is stale, and Invalid (Field "id") when
// the record is already deleted.
func (db *DB) Forget(ctx context.Context, id string, revision int, reason screen.Text, client string) (*Record, error) {
	var rec *Record
	if err := db.write(ctx, "forget", func(tx *txn) (err error) {
		rec, err = forgetTx(ctx, tx, id, revision, reason, client)
		return err
	}); err != nil {
		return nil, err
	}
	return rec, nil
}

func forgetTx(ctx context.Context, tx *txn, id string, revision int, reason screen.Text, client string) (*Record, error) {
	cur, err := findRecordTx(ctx, tx, id)
	if err != nil {
		return nil, err
	}
	if revision != 0 && cur.Revision != revision {
		return nil, conflict(cur, revision)
	}
	if cur.Status == StatusDeleted {
		return nil, errorf(Invalid, "id", "record is already deleted")
	}
	if _, err := tx.ExecContext(ctx, `
		UPDATE records SET status = ?, revision = revision + 1, updated_at = ? WHERE id = ?`,
		StatusDeleted, tx.now.UnixMilli(), id,
	); err != nil {
		return nil, classify("forget", err)
	}
	if err := insertAuditTx(ctx, tx, AuditEntry{
		Client: client, Action: ActionForget, Namespace: cur.Namespace, RecordID: id, Detail: reason,
	}); err != nil {
		return nil, err
	}
	return findRecordTx(ctx, tx, id)
}

// supersedeTx retires target in favour of repl inside the caller's
// transaction: the one place the supersession rules (SPEC R-R5) live. repl
// must already hold its new status. field names the request field for errors.
// On success target becomes superseded (revision + 1, superseded_by = repl),
// repl.supersedes = target, and an audit row "supersede" names the target.
// A refusal returns an error and the caller's rollback undoes everything.
func supersedeTx(ctx context.Context, tx *txn, repl *Record, targetID, field, client string) error {
	if targetID == repl.ID {
		return errorf(Invalid, field, "a record cannot supersede itself")
	}
	target, err := findRecordTx(ctx, tx, targetID)
	if ErrorCode(err) == NotFound {
		return errorf(NotFound, field, "no record has this id")
	} else if err != nil {
		return err
	}
	if target.Namespace != repl.Namespace {
		return errorf(Invalid, field, "the record to supersede is in another namespace (%s)", target.Namespace)
	}
	// Walk the target's supersedes chain: meeting repl there would close a
	// cycle. The visited set stops a corrupt chain from looping forever.
	seen := map[string]bool{target.ID: true}
	for next := target.Supersedes; next != ""; {
		if next == repl.ID {
			return errorf(Invalid, field, "superseding %s would make a cycle: it already descends from this record", target.ID)
		}
		if seen[next] {
			break
		}
		seen[next] = true
		var up sql.NullString
		err := tx.QueryRowContext(ctx, `SELECT supersedes FROM records WHERE id = ?`, next).Scan(&up)
		if err == sql.ErrNoRows {
			break
		} else if err != nil {
			return classify("supersede", err)
		}
		next = up.String
	}
	if repl.Status != StatusActive {
		return errorf(Invalid, field, "only an active record can supersede; this one is %s", repl.Status)
	}
	if target.Status != StatusActive {
		return errorf(Invalid, field, "only an active record can be superseded; %s is %s", target.ID, target.Status)
	}

	if _, err := tx.ExecContext(ctx, `
		UPDATE records SET status = ?, superseded_by = ?, revision = revision + 1, updated_at = ?
		WHERE id = ?`,
		StatusSuperseded, repl.ID, tx.now.UnixMilli(), target.ID,
	); err != nil {
		return classify("supersede", err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE records SET supersedes = ? WHERE id = ?`, target.ID, repl.ID); err != nil {
		return classify("supersede", err)
	}
	return insertAuditTx(ctx, tx, AuditEntry{
		Client: client, Action: ActionSupersede, Namespace: target.Namespace, RecordID: target.ID,
		Detail: screen.Redact("superseded by " + repl.ID),
	})
}

// Get returns the records with the given ids in the order asked, whatever
// their status; unknown ids are left out and a repeated id comes once.
func (db *DB) Get(ctx context.Context, ids []string) ([]*Record, error) {
	ids = uniq(ids)
	if len(ids) == 0 {
		return nil, nil
	}
	var recs []*Record
	if err := db.read(ctx, "get", func(tx *txn) (err error) {
		recs, err = findRecordsTx(ctx, tx, `WHERE r.id IN (SELECT value FROM json_each(?))`, jsonList(ids))
		return err
	}); err != nil {
		return nil, err
	}
	byID := make(map[string]*Record, len(recs))
	for _, r := range recs {
		byID[r.ID] = r
	}
	out := make([]*Record, 0, len(recs))
	for _, id := range ids {
		if r, ok := byID[id]; ok {
			out = append(out, r)
		}
	}
	return out, nil
}

// conflict is the Conflict error for a stale revision.
func conflict(cur *Record, asked int) *Error {
	return &Error{
		Code:    Conflict,
		Field:   "revision",
		Message: fmt.Sprintf("revision %d is stale; the record is at revision %d", asked, cur.Revision),
		Current: cur,
	}
}

// recordColumns is the select list scanRecord reads, over records AS r.
const recordColumns = `r.id, r.namespace, r.type, r.title, r.content, r.status, r.revision, r.writer,
	r.confidence, r.effective_confidence, r.proof_count, r.refutation_count,
	COALESCE(r.supersedes, ''), COALESCE(r.superseded_by, ''), r.topics, r.source,
	r.created_at, r.updated_at`

type scanner interface{ Scan(dest ...any) error }

// scanRecord reads recordColumns (followed by extra destinations).
func scanRecord(s scanner, extra ...any) (*Record, error) {
	var (
		r            Record
		topics       string
		created, upd int64
	)
	dest := append([]any{
		&r.ID, &r.Namespace, &r.Type, &r.Title, &r.Content, &r.Status, &r.Revision, &r.Writer,
		&r.Confidence, &r.EffectiveConfidence, &r.ProofCount, &r.RefutationCount,
		&r.Supersedes, &r.SupersededBy, &topics, &r.Source, &created, &upd,
	}, extra...)
	if err := s.Scan(dest...); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(topics), &r.Topics); err != nil {
		return nil, fmt.Errorf("record %s: topics: %w", r.ID, err)
	}
	if len(r.Topics) == 0 {
		r.Topics = nil
	}
	r.CreatedAt = time.UnixMilli(created).UTC()
	r.UpdatedAt = time.UnixMilli(upd).UTC()
	return &r, nil
}

// findRecordTx returns one record with its anchors, or NotFound (Field "id").
func findRecordTx(ctx context.Context, tx *txn, id string) (*Record, error) {
	recs, err := findRecordsTx(ctx, tx, `WHERE r.id = ?`, id)
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 {
		return nil, errorf(NotFound, "id", "no record has this id")
	}
	return recs[0], nil
}

// findRecordsTx returns the records matching where (a clause over records AS
// r), with their anchors.
func findRecordsTx(ctx context.Context, tx *txn, where string, args ...any) ([]*Record, error) {
	rows, err := tx.QueryContext(ctx, `SELECT `+recordColumns+` FROM records AS r `+where, args...)
	if err != nil {
		return nil, classify("find records", err)
	}
	defer rows.Close()
	var recs []*Record
	for rows.Next() {
		r, err := scanRecord(rows)
		if err != nil {
			return nil, classify("find records", err)
		}
		recs = append(recs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, classify("find records", err)
	}
	if err := attachAnchorsTx(ctx, tx, recs); err != nil {
		return nil, err
	}
	return recs, nil
}

// attachAnchorsTx loads the anchors of recs, in their stored order.
func attachAnchorsTx(ctx context.Context, tx *txn, recs []*Record) error {
	if len(recs) == 0 {
		return nil
	}
	byID := make(map[string]*Record, len(recs))
	ids := make([]string, len(recs))
	for i, r := range recs {
		byID[r.ID] = r
		ids[i] = r.ID
	}
	rows, err := tx.QueryContext(ctx, `
		SELECT record_id, anchor, state, checked_at, checked_by FROM anchors
		WHERE record_id IN (SELECT value FROM json_each(?))
		ORDER BY record_id, position`, jsonList(ids))
	if err != nil {
		return classify("find anchors", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id      string
			a       Anchor
			checked sql.NullInt64
		)
		if err := rows.Scan(&id, &a.Anchor, &a.State, &checked, &a.CheckedBy); err != nil {
			return classify("find anchors", err)
		}
		a.CheckedAt = fromMS(checked)
		if r := byID[id]; r != nil {
			r.Anchors = append(r.Anchors, a)
		}
	}
	return classify("find anchors", rows.Err())
}

// insertAnchorsTx writes anchors for record id in the order given.
func insertAnchorsTx(ctx context.Context, tx *txn, id string, anchors []Anchor) error {
	for i, a := range anchors {
		if _, err := tx.ExecContext(ctx, `
			INSERT INTO anchors (record_id, anchor, position, state, checked_at, checked_by)
			VALUES (?, ?, ?, ?, ?, ?)`,
			id, a.Anchor, i, a.State, ms(a.CheckedAt), a.CheckedBy,
		); err != nil {
			return classify("insert anchors", err)
		}
	}
	return nil
}

// keepAnchorStates returns the anchors named, in order; an anchor the record
// already had keeps its state and last check, a new one starts unknown.
func keepAnchorStates(old []Anchor, names []string) []Anchor {
	out := make([]Anchor, len(names))
	for i, n := range names {
		out[i] = Anchor{Anchor: n, State: AnchorUnknown}
		for _, a := range old {
			if a.Anchor == n {
				out[i] = a
				break
			}
		}
	}
	return out
}

func anchorNames(as []Anchor) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.Anchor
	}
	return out
}

// texts unwraps a list of screened values, dropping repeats (first kept) and
// refusing empty ones as Invalid "<field>[i]".
func texts(field string, ts []screen.Text) ([]string, error) {
	out := make([]string, 0, len(ts))
	for i, t := range ts {
		s := t.String()
		if s == "" {
			return nil, errorf(Invalid, fmt.Sprintf("%s[%d]", field, i), "must not be empty")
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out, nil
}

// uniq returns ids without repeats or empty strings, first occurrence kept.
func uniq(ids []string) []string {
	out := make([]string, 0, len(ids))
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		if id != "" && !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// topicsJSON encodes topics for the records.topics column, "[]" when empty.
func topicsJSON(topics []string) string {
	if len(topics) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(topics) // a []string always marshals
	return string(b)
}

// jsonList encodes a string list for json_each(?); nil stays SQL NULL.
func jsonList(ss []string) any {
	if len(ss) == 0 {
		return nil
	}
	b, _ := json.Marshal(ss) // a []string always marshals
	return string(b)
}

func validConfidence(c float64) bool { return c > 0 && c <= 1 } // false for NaN
