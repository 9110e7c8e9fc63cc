package storage

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hearth-memory/hearth/storage/screen"
)

// Record types (docs/design.md R-R2). The first five are durable.
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

// DurableTypes are the first five Types: durable knowledge rather than
// notes or summaries.
var DurableTypes = Types[:5:5]

// ValidType reports whether t is a record type.
func ValidType(t string) bool { return slices.Contains(Types, t) }

// CheckType refuses t unless it is a record type: Invalid naming field.
// It is the one check of a record's type; the server runs it on requests
// before their other work, storage on every write.
func CheckType(field, t string) error {
	if !ValidType(t) {
		return errorf(Invalid, field, "must be %s", Alternatives(Types))
	}
	return nil
}

// IsDurable reports whether records of type t are durable knowledge (one of
// DurableTypes).
func IsDurable(t string) bool { return slices.Contains(DurableTypes, t) }

// Alternatives spells a list of names for a message or a description:
// "a, b or c".
func Alternatives(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// Record statuses (docs/design.md R-R3). Active and candidate records are live.
const (
	StatusActive     = "active"
	StatusCandidate  = "candidate"
	StatusSuperseded = "superseded"
	StatusDeleted    = "deleted"
)

// Statuses lists every record status.
var Statuses = []string{StatusActive, StatusCandidate, StatusSuperseded, StatusDeleted}

// ValidStatus reports whether s is a record status.
func ValidStatus(s string) bool { return slices.Contains(Statuses, s) }

// CheckStatus refuses s unless it is a record status: Invalid naming field.
func CheckStatus(field, s string) error {
	if !ValidStatus(s) {
		return errorf(Invalid, field, "must be %s", Alternatives(Statuses))
	}
	return nil
}

// CheckLive refuses s unless it is active or candidate, the statuses an
// update may set: Invalid naming field.
func CheckLive(field, s string) error {
	if !liveStatus(s) {
		return errorf(Invalid, field, "can only move between active and candidate")
	}
	return nil
}

// Record sources (docs/design.md R-R1): how a record came to be.
const (
	SourceStore      = "store"
	SourceExtraction = "extraction"
	SourceImport     = "import"
	SourceSession    = "session"
	// SourceCapture is an observation the hooks captured (capture.go).
	SourceCapture = "capture"
)

// Sources lists every record source.
var Sources = []string{SourceStore, SourceExtraction, SourceImport, SourceSession, SourceCapture}

// ValidSource reports whether s is a record source.
func ValidSource(s string) bool { return slices.Contains(Sources, s) }

// CheckSource refuses s unless it is a record source: Invalid naming field.
func CheckSource(field, s string) error {
	if !ValidSource(s) {
		return errorf(Invalid, field, "must be one of %s", strings.Join(Sources, ", "))
	}
	return nil
}

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
func (r *Record) Live() bool { return liveStatus(r.Status) }

// liveStatus reports whether s is active or candidate: the statuses a new
// record and an update may set.
func liveStatus(s string) bool { return s == StatusActive || s == StatusCandidate }

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

// CheckConfidence refuses an asserted confidence outside (0, 1], NaN
// included: Invalid naming field.
func CheckConfidence(field string, c float64) error {
	if !(c > 0 && c <= 1) {
		return errorf(Invalid, field, "must be above 0 and at most 1")
	}
	return nil
}

// CheckRequired refuses a text that is empty or only white space, such as
// a record's title or content: Invalid naming field.
func CheckRequired(field, s string) error {
	if strings.TrimSpace(s) == "" {
		return errorf(Invalid, field, "is required")
	}
	return nil
}
