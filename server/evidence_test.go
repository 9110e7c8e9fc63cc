package server

import (
	"testing"
	"unicode/utf8"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"github.com/hearth-memory/hearth/storage"
	"google.golang.org/protobuf/encoding/protojson"
)

// FuzzCheckEvidenceRequest feeds arbitrary JSON to the evidence and unused
// validators: neither may panic, and what they accept holds their limits.
func FuzzCheckEvidenceRequest(f *testing.F) {
	for _, s := range []string{
		`{}`,
		`{"id":"01JD3M5ZK9Q8W7E6R5T4Y3X2V1","stance":"corroborates"}`,
		`{"id":"01JD3M5ZK9Q8W7E6R5T4Y3X2V1","stance":"contradicts","note":"checked db/schema.sql"}`,
		`{"id":"01jd3m5zk9q8w7e6r5t4y3x2v1","stance":"Corroborates","note":"\u00ff\u00fe"}`,
		`{"namespace":"github/acme/api","limit":100}`,
		`{"namespace":"","limit":4294967295}`,
	} {
		f.Add(s)
	}
	opts := protojson.UnmarshalOptions{DiscardUnknown: true}
	f.Fuzz(func(t *testing.T, s string) {
		var ev hearthv1.EvidenceRequest
		if opts.Unmarshal([]byte(s), &ev) == nil && checkEvidenceRequest(&ev) == nil {
			if !idPattern.MatchString(ev.GetId()) || !storage.ValidStance(ev.GetStance()) ||
				!utf8.ValidString(ev.GetNote()) || utf8.RuneCountInString(ev.GetNote()) > maxNoteChars {
				t.Fatalf("accepted a bad evidence request: %s", s)
			}
		}
		var un hearthv1.UnusedRequest
		if opts.Unmarshal([]byte(s), &un) == nil && checkUnusedRequest(&un) == nil && int(un.GetLimit()) > maxUnusedLimit {
			t.Fatalf("accepted limit %d", un.GetLimit())
		}
	})
}

func TestCheckEvidenceRequest(t *testing.T) {
	id := "01JD3M5ZK9Q8W7E6R5T4Y3X2V1"
	long := make([]rune, maxNoteChars)
	for i := range long {
		long[i] = 'é'
	}
	for _, tt := range []struct {
		name  string
		req   *hearthv1.EvidenceRequest
		field string // "" when valid
	}{
		{"OKCorroborates", &hearthv1.EvidenceRequest{Id: id, Stance: "corroborates"}, ""},
		{"OKContradictsLongestNote", &hearthv1.EvidenceRequest{Id: id, Stance: "contradicts", Note: string(long)}, ""},
		{"ErrNoID", &hearthv1.EvidenceRequest{Stance: "corroborates"}, "id"},
		{"ErrBadID", &hearthv1.EvidenceRequest{Id: "01JD3M5Z", Stance: "corroborates"}, "id"},
		{"ErrNoStance", &hearthv1.EvidenceRequest{Id: id}, "stance"},
		{"ErrStanceCase", &hearthv1.EvidenceRequest{Id: id, Stance: "Corroborates"}, "stance"},
		{"ErrNoteTooLong", &hearthv1.EvidenceRequest{Id: id, Stance: "contradicts", Note: string(long) + "x"}, "note"},
		{"ErrNoteUTF8", &hearthv1.EvidenceRequest{Id: id, Stance: "contradicts", Note: "\xff"}, "note"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := checkEvidenceRequest(tt.req)
			if got := fieldOf(t, err); got != tt.field {
				t.Errorf("field: got %q (%v), want %q", got, err, tt.field)
			}
		})
	}
}

func TestEvidenceWhy(t *testing.T) {
	for _, tt := range []struct {
		proofs, refutations int
		want                string
	}{
		{0, 0, "asserted, unwitnessed"},
		{1, 0, "1 for/0 against"},
		{2, 1, "2 for/1 against"},
		{0, 3, "0 for/3 against"},
	} {
		r := &storage.Record{Confidence: 0.6, ProofCount: tt.proofs, RefutationCount: tt.refutations}
		if got := evidenceWhy(r); got != tt.want {
			t.Errorf("%d/%d: got %q, want %q", tt.proofs, tt.refutations, got, tt.want)
		}
	}
}
