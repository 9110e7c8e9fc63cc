package server

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"github.com/hearth-memory/hearth/server/budget"
	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/namespace"
	"github.com/hearth-memory/hearth/storage/textcheck"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// ULID: 26 characters of Crockford base32.
var idPattern = regexp.MustCompile(`^[0-9A-HJKMNP-TV-Z]{26}$`)

func checkID(field, id string) error {
	if id == "" {
		return invalid(field, "is required")
	}
	if !idPattern.MatchString(id) {
		return invalid(field, "is not a record id (26 characters, e.g. 01JD3M5ZK9Q8W7E6R5T4Y3X2V1)")
	}
	return nil
}

func checkNamespace(field, ns string) error {
	if err := namespace.Validate(ns); err != nil {
		return invalid(field, "%v", err)
	}
	return nil
}

// checkTopics names the element at fault, e.g. topics[2].
func checkTopics(field string, topics []string) error {
	if len(topics) > namespace.MaxTopics {
		return invalid(field, "has %d topics; at most %d", len(topics), namespace.MaxTopics)
	}
	seen := make(map[string]bool, len(topics))
	for i, t := range topics {
		if err := namespace.ValidateTopic(t); err != nil {
			return invalid(fieldIndex(field, i), "%v", err)
		}
		if seen[t] {
			return invalid(fieldIndex(field, i), "repeats an earlier topic")
		}
		seen[t] = true
	}
	return nil
}

// checkText is the one check of a free text's characters: it refuses text
// that is not valid UTF-8 or holds a character textcheck refuses (a control
// character, but tab and line breaks where multiline allows them; a
// bidirectional override or isolate), naming the field and the character.
func checkText(field, s string, multiline bool) error {
	if !utf8.ValidString(s) {
		return invalid(field, "is not valid UTF-8")
	}
	if r, i := textcheck.Find(s, multiline); i >= 0 {
		if multiline {
			return invalid(field, "must not hold control characters (but tab and line breaks) or bidirectional overrides; U+%04X at byte %d", r, i)
		}
		return invalid(field, "must be one line, without control characters or bidirectional overrides; U+%04X at byte %d", r, i)
	}
	return nil
}

// checkLen is the one length check of a text: at most max characters
// (runes), naming the field and both counts.
func checkLen(field, s string, max int) error {
	if n := utf8.RuneCountInString(s); n > max {
		return invalid(field, "is %d characters; at most %d", n, max)
	}
	return nil
}

// checkBounded is checkText and then checkLen: a free text's characters
// and its length.
func checkBounded(field, s string, multiline bool, max int) error {
	if err := checkText(field, s, multiline); err != nil {
		return err
	}
	return checkLen(field, s, max)
}

// checkTitle checks a title's characters and length on the wire, then that
// it is not blank (storage's rule, storage.CheckRequired).
func checkTitle(field, t string) error {
	if err := checkBounded(field, t, false, maxTitleChars); err != nil {
		return err
	}
	return storage.CheckRequired(field, t)
}

// checkContent checks content's characters, that it is not blank (storage's
// rule) and its size on the wire, in that order.
func checkContent(field, c string) error {
	if err := checkText(field, c, true); err != nil {
		return err
	}
	if err := storage.CheckRequired(field, c); err != nil {
		return err
	}
	if len(c) > maxContentBytes {
		return invalid(field, "is %d bytes; at most %d (split it into several records)", len(c), maxContentBytes)
	}
	return nil
}

// checkAnchor validates an anchor's form with the one anchor parser:
// entity:<entity_id>, path:<relative path>, host:<name> or url:<absolute
// URL>, in the form it is stored in. Credentials in a url: anchor are the
// screen's to refuse (screen.Anchor), after this check.
func checkAnchor(field, a string) error {
	if err := checkLen(field, a, maxAnchorChars); err != nil {
		return err
	}
	return storage.CheckAnchor(field, a)
}

func checkAnchors(field string, as []string) error {
	if len(as) > maxAnchors {
		return invalid(field, "has %d anchors; at most %d", len(as), maxAnchors)
	}
	for i, a := range as {
		if err := checkAnchor(fieldIndex(field, i), a); err != nil {
			return err
		}
	}
	return nil
}

func fieldIndex(field string, i int) string {
	return field + "[" + strconv.Itoa(i) + "]"
}

// checkRecordSize refuses a record whose JSON would not fit the records
// budget on its own. It measures a draft with the longest values the server
// fills in (id, times, revision, anchor states).
func checkRecordSize(sz *budget.Sizer, field string, r *hearthv1.Record) error {
	draft := proto.Clone(r).(*hearthv1.Record)
	draft.Id = strings.Repeat("0", 26)
	draft.Revision = math.MaxUint32
	draft.Status = "superseded"
	draft.SupersededBy = strings.Repeat("0", 26)
	draft.EffectiveConfidence = 0.123456789012345
	draft.ProofCount, draft.RefutationCount = 99999, 99999
	wide := timestamppb.New(time.Date(2099, 12, 31, 23, 59, 59, 999_000_000, time.UTC))
	draft.CreatedAt, draft.UpdatedAt = wide, wide
	draft.Anchors = nil
	for _, a := range r.Anchors {
		// checked_by at its longest: a client's name is at most 64 characters.
		draft.Anchors = append(draft.Anchors, &hearthv1.Anchor{Anchor: a.Anchor, State: "unavailable", CheckedAt: wide,
			CheckedBy: strings.Repeat("w", 64)})
	}
	// Marshalled only when its bound does not already fit: every store and
	// update passes here.
	fits, n, err := sz.Fits(draft, maxRecordBytes)
	if err != nil {
		return err
	}
	if !fits {
		return invalid(field, "the record would be %d bytes as JSON; at most %d fit the records budget (shorten it or split it)", n, maxRecordBytes)
	}
	return nil
}
