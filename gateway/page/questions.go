package page

import (
	"bytes"
	"context"
	"html/template"
	"strconv"
	"sync"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// questionsLimit is how many questions the page ranks.
const questionsLimit = 10

// questionsView is the panel of the questions sessions keep asking (docs/design.md
// R-W1, R-W2): the top questions of every namespace by demand, each with
// its answer state, drawn as bars.
type questionsView struct {
	Err   string
	Empty string
	Rows  []questionBar
	// Chart geometry.
	Width, Height, BarX, BarW int
}

type questionBar struct {
	Text, Label, Namespace, State, Kind, Color, Title string
	Demand, Asks, Sessions, UsedShare                 string
	TextY, BarY, W, StateX                            int
}

// questionLabelRunes is what fits left of the bars: the question and its
// namespace.
const questionLabelRunes = 70

// stateColors: fresh answers green, stale amber, unanswered grey.
var stateColors = map[string]string{"fresh": "#4fb89a", "stale": "#e0a84f", "unanswered": "#6b7482"}

var questionsTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("questions").Parse(`<section id="questions">
<h2>Questions by demand <span class="muted small">what sessions keep asking; demand = sessions × (1 − share used)</span></h2>
{{- if .Err}}
<p class="err">{{.Err}}</p>
{{- else if .Empty}}
<p class="muted">{{.Empty}}</p>
{{- else}}
<svg viewBox="0 0 {{.Width}} {{.Height}}" role="img" aria-label="Questions by demand">
{{- range .Rows}}
<g class="question-row" data-demand="{{.Demand}}" data-state="{{.State}}" data-namespace="{{.Namespace}}">
<title>{{.Title}}</title>
<text x="0" y="{{.TextY}}">{{.Label}} <tspan class="dim">{{.Namespace}}</tspan></text>
<rect x="{{$.BarX}}" y="{{.BarY}}" width="{{.W}}" height="14" rx="2" fill="{{.Color}}"/>
<text class="dim" x="{{.StateX}}" y="{{.TextY}}">{{.Demand}} · {{.State}}{{if .Kind}} ({{.Kind}}){{end}}</text>
</g>
{{- end}}
</svg>
<p class="muted small">Bar length is demand; colour is the answer: green fresh, amber stale, grey unanswered. Read an answer with memory_answer.</p>
{{- end}}
</section>`))
})

// questions renders the panel from memory_questions over every namespace.
func (h *Handler) questions(ctx context.Context) template.HTML {
	v := h.questionsView(ctx)
	var buf bytes.Buffer
	if err := questionsTemplate().Execute(&buf, v); err != nil {
		h.cfg.Log.ErrorContext(ctx, "render questions", "err", err)
		return ""
	}
	return template.HTML(buf.String()) // the template escaped every value
}

func (h *Handler) questionsView(ctx context.Context) questionsView {
	v := questionsView{Width: 1100, BarX: 520, BarW: 400}
	resp, err := hearthv1.NewAnswerServiceClient(h.cfg.Conn).Questions(ctx,
		&hearthv1.QuestionsRequest{EveryNamespace: true, Limit: questionsLimit})
	switch {
	case status.Code(err) == codes.Unimplemented:
		v.Empty = "memory_questions is not available in this version."
		return v
	case err != nil:
		v.Err = callError("memory_questions", err)
		return v
	case len(resp.GetQuestions()) == 0:
		v.Empty = "No question recorded yet: searches are recorded as they come (recall searches are not)."
		return v
	}
	top := resp.GetQuestions()[0].GetDemand()
	for i, q := range resp.GetQuestions() {
		w := 2
		if top > 0 {
			w = max(2, int(q.GetDemand()/top*float64(v.BarW)))
		}
		y := 8 + i*24
		// The same question asked in two namespaces is two rows: each
		// names its namespace, and the text yields the room it takes.
		label, room := q.GetText(), max(24, questionLabelRunes-1-len([]rune(q.GetNamespace())))
		if r := []rune(label); len(r) > room {
			label = string(r[:room-1]) + "…"
		}
		b := questionBar{
			Text: q.GetText(), Label: label, Namespace: q.GetNamespace(), State: q.GetAnswerState(), Kind: q.GetAnswerKind(),
			Color: stateColors[q.GetAnswerState()], Demand: strconv.FormatFloat(q.GetDemand(), 'f', -1, 64),
			Asks: itoa(q.GetAsks()), Sessions: itoa(q.GetSessions()),
			UsedShare: strconv.FormatFloat(q.GetUsedShare(), 'f', -1, 64),
			TextY:     y + 12, BarY: y + 1, W: w, StateX: v.BarX + w + 8,
		}
		if b.Color == "" {
			b.Color = stateColors["unanswered"]
		}
		b.Title = q.GetText() + " — " + q.GetNamespace() + ": " + b.Asks + " asks in " + b.Sessions +
			" sessions, share used " + b.UsedShare + ", demand " + b.Demand + ", answer " + b.State
		v.Rows = append(v.Rows, b)
	}
	v.Height = 16 + len(v.Rows)*24
	return v
}
