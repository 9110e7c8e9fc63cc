package server

import (
	"strings"
	"testing"
	"unicode/utf8"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"github.com/hearth-memory/hearth/server/options"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// FuzzCheckContextRequest feeds arbitrary JSON to the context and bootstrap
// validators: neither may panic, and what they accept holds their limits.
func FuzzCheckContextRequest(f *testing.F) {
	for _, s := range []string{
		`{}`,
		`{"task":"fix the cache invalidation"}`,
		`{"task":"fix it","budget_tokens":99}`,
		`{"task":"fix it","budget_tokens":4294967295,"namespace":"github/acme/api","topics":["go"]}`,
		`{"task":"\u0000\u2028","budget_tokens":100}`,
		`{"session_id":"s-1"}`,
		`{"session_id":"\u0007bell","namespace":"global"}`,
	} {
		f.Add(s)
	}
	opts := protojson.UnmarshalOptions{DiscardUnknown: true}
	f.Fuzz(func(t *testing.T, s string) {
		var cr hearthv1.ContextRequest
		if opts.Unmarshal([]byte(s), &cr) == nil && checkContextRequest(&cr) == nil {
			if strings.TrimSpace(cr.GetTask()) == "" || !utf8.ValidString(cr.GetTask()) ||
				utf8.RuneCountInString(cr.GetTask()) > maxTaskChars ||
				(cr.BudgetTokens != nil && int(cr.GetBudgetTokens()) < minContextBudget) {
				t.Fatalf("accepted a bad context request: %s", s)
			}
			srv := &Server{opts: options.Default()}
			if n, _ := srv.contextBudget(cr.BudgetTokens); n < minContextBudget || n > 8000 {
				t.Fatalf("budget %d from %s", n, s)
			}
		}
		var br hearthv1.BootstrapRequest
		if opts.Unmarshal([]byte(s), &br) == nil && checkBootstrapRequest(&br) == nil {
			if len(br.GetSessionId()) > maxBootstrapSessID || !utf8.ValidString(br.GetSessionId()) ||
				strings.ContainsFunc(br.GetSessionId(), func(r rune) bool { return r < 0x20 || r == 0x7f }) {
				t.Fatalf("accepted a bad session id: %s", s)
			}
		}
	})
}

func TestCheckContextRequest(t *testing.T) {
	for _, tt := range []struct {
		name  string
		req   *hearthv1.ContextRequest
		field string // "" when valid
	}{
		{"OK", &hearthv1.ContextRequest{Task: "add a retry to the billing client"}, ""},
		{"OKLongest", &hearthv1.ContextRequest{Task: strings.Repeat("é", maxTaskChars)}, ""},
		{"OKSmallestBudget", &hearthv1.ContextRequest{Task: "x", BudgetTokens: proto.Uint32(uint32(minContextBudget))}, ""},
		{"OKHugeBudget", &hearthv1.ContextRequest{Task: "x", BudgetTokens: proto.Uint32(1 << 31)}, ""},
		{"ErrNoTask", &hearthv1.ContextRequest{}, "task"},
		{"ErrBlankTask", &hearthv1.ContextRequest{Task: " \n\t"}, "task"},
		{"ErrTaskUTF8", &hearthv1.ContextRequest{Task: "\xff"}, "task"},
		{"ErrTaskTooLong", &hearthv1.ContextRequest{Task: strings.Repeat("é", maxTaskChars+1)}, "task"},
		{"ErrBudgetZero", &hearthv1.ContextRequest{Task: "x", BudgetTokens: proto.Uint32(0)}, "budget_tokens"},
		{"ErrBudgetSmall", &hearthv1.ContextRequest{Task: "x", BudgetTokens: proto.Uint32(uint32(minContextBudget - 1))}, "budget_tokens"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := budgetField(t, checkContextRequest(tt.req)); got != tt.field {
				t.Errorf("field: got %q, want %q", got, tt.field)
			}
		})
	}
}

func TestCheckBootstrapRequest(t *testing.T) {
	for _, tt := range []struct {
		name, id, field string
	}{
		{"OKNone", "", ""},
		{"OK", "9f1c-session_2", ""},
		{"OKLongest", strings.Repeat("s", maxBootstrapSessID), ""},
		{"ErrTooLong", strings.Repeat("s", maxBootstrapSessID+1), "session_id"},
		{"ErrControl", "a\nb", "session_id"},
		{"ErrUTF8", "\xff", "session_id"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := budgetField(t, checkBootstrapRequest(&hearthv1.BootstrapRequest{SessionId: tt.id})); got != tt.field {
				t.Errorf("field: got %q, want %q", got, tt.field)
			}
		})
	}
}

func TestServer_ContextBudget(t *testing.T) {
	for _, tt := range []struct {
		name        string
		def, limit  int
		asked       *uint32
		want        int
		wantClamped bool
	}{
		{"Default", 4000, 8000, nil, 4000, false},
		{"Asked", 4000, 8000, proto.Uint32(6000), 6000, false},
		{"AtLimit", 4000, 8000, proto.Uint32(8000), 8000, false},
		{"Clamped", 4000, 8000, proto.Uint32(8001), 8000, true},
		{"ClampedHuge", 4000, 8000, proto.Uint32(1<<32 - 1), 8000, true},
		{"Options", 1000, 2000, proto.Uint32(3000), 2000, true},
		{"OptionsDefault", 1000, 2000, nil, 1000, false},
		{"NoOptions", 0, 0, nil, defaultContextBudget, false},
		{"NoOptionsClamped", 0, 0, proto.Uint32(9000), defaultContextLimit, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := &Server{opts: options.Options{ContextBudgetTokens: tt.def, HardContextLimitTokens: tt.limit}}
			got, clamped := s.contextBudget(tt.asked)
			if got != tt.want || clamped != tt.wantClamped {
				t.Errorf("got %d %v, want %d %v", got, clamped, tt.want, tt.wantClamped)
			}
		})
	}
}

// budgetField returns the field a validation error names, "" for nil.
func budgetField(tb testing.TB, err error) string {
	tb.Helper()
	if err == nil {
		return ""
	}
	fe, ok := err.(*fieldError)
	if !ok {
		tb.Fatalf("got %v, want a field error", err)
	}
	return fe.field
}
