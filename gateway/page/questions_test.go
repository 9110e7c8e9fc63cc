package page

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/gateway/gatewaytest"
	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// questionsAnswers serves baseAnswers plus memory_questions.
func questionsAnswers(resp *hearthv1.QuestionsResponse, err error) func(string, proto.Message) (proto.Message, error) {
	a := baseAnswers()
	return func(method string, req proto.Message) (proto.Message, error) {
		if strings.HasSuffix(method, "/Questions") {
			if q := req.(*hearthv1.QuestionsRequest); !q.GetEveryNamespace() || q.GetLimit() != questionsLimit {
				return nil, status.Error(codes.InvalidArgument, "the page asks every namespace, 10 questions")
			}
			return resp, err
		}
		return a.respond(method, req)
	}
}

func TestHandler_Questions(t *testing.T) {
	t.Parallel()
	t.Run("OK", func(t *testing.T) {
		resp := &hearthv1.QuestionsResponse{Questions: []*hearthv1.Question{
			{Id: "Q1", Namespace: "github/acme/api", Text: "How do we run the <migrations>?", Asks: 6, Sessions: 4, Used: 1,
				UsedShare: 0.1667, Demand: 3.3333, AnswerState: "stale", AnswerKind: "model"},
			{Id: "Q2", Namespace: "global", Text: strings.Repeat("which python version ", 5), Asks: 2, Sessions: 2, Demand: 2, AnswerState: "unanswered"},
			{Id: "Q3", Namespace: "global", Text: "who owns billing", Declared: true, AnswerState: "fresh", AnswerKind: "none"},
			{Id: "Q4", Namespace: "github/acme/web", Text: "who owns billing", Asks: 1, Sessions: 1, AnswerState: "unanswered"},
		}}
		r, _ := renderWith(t, questionsAnswers(resp, nil))
		checkSelfContained(t, r.html)
		wantContains(t, r.html,
			`<section id="questions">`,
			`data-demand="3.3333" data-state="stale" data-namespace="github/acme/api"`,
			`How do we run the &lt;migrations&gt;?`, // escaped
			`fill="#e0a84f"`, `fill="#6b7482"`, `fill="#4fb89a"`,
			`3.3333 · stale (model)`, `0 · fresh (none)`,
			`6 asks in 4 sessions, share used 0.1667, demand 3.3333, answer stale`,
			`>which python version which python version which python version… <tspan class="dim">global</tspan></text>`,
			// The same question in two namespaces: each row names its own
			// (issue 42).
			`>who owns billing <tspan class="dim">global</tspan></text>`,
			`>who owns billing <tspan class="dim">github/acme/web</tspan></text>`,
		)
		if strings.Contains(r.html, "<migrations>") {
			t.Error("a question's text reached the page unescaped")
		}
		// The bars are drawn to scale: the top question's is the full width.
		if !strings.Contains(r.html, `width="400" height="14"`) || !strings.Contains(r.html, `width="240" height="14"`) {
			t.Errorf("bars not to scale: %s", r.html[strings.Index(r.html, `<section id="questions">`):][:900])
		}
	})
	t.Run("OKEmpty", func(t *testing.T) {
		r, _ := renderWith(t, questionsAnswers(&hearthv1.QuestionsResponse{}, nil))
		wantContains(t, r.html, "No question recorded yet")
	})
	t.Run("ErrCall", func(t *testing.T) {
		r, _ := renderWith(t, questionsAnswers(nil, status.Error(codes.Internal, "boom")))
		wantContains(t, r.html, "memory_questions failed: Internal: boom", `id="tile-records"><b>7</b>`)
	})
}

// renderWith serves the page to the ingress proxy over a backend that
// answers with respond.
func renderWith(t *testing.T, respond func(string, proto.Message) (proto.Message, error)) (rendered, *gatewaytest.Backend) {
	t.Helper()
	b := gatewaytest.New(t, respond)
	cfg := Config{Conn: b.Conn, Token: "hearth_pagetoken", Now: func() time.Time { return testNow },
		API: netip.MustParseAddrPort("127.0.0.1:8765")}
	r := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:8099/", nil)
	r.RemoteAddr = IngressProxy.String() + ":50000"
	w := httptest.NewRecorder()
	Guard(IngressAllowed, New(cfg)).ServeHTTP(w, r)
	body, _ := io.ReadAll(w.Result().Body)
	return rendered{code: w.Code, hdr: w.Header(), html: string(body)}, b
}
