package page

import (
	"context"
	"strconv"

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

// questions renders the panel from memory_questions over every namespace.
func (h *Handler) questions(ctx context.Context) markup {
	var w htmlWriter
	writeQuestions(&w, h.questionsView(ctx))
	return markup(w.String())
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

func writeQuestions(w *htmlWriter, v questionsView) {
	w.s(`<section id="questions">
<h2>Questions by demand <span class="muted small">what sessions keep asking; demand = sessions × (1 − share used)</span></h2>`)
	switch {
	case v.Err != "":
		w.f("\n<p class=\"err\">%v</p>", v.Err)
	case v.Empty != "":
		w.f("\n<p class=\"muted\">%v</p>", v.Empty)
	default:
		w.f(`
<svg viewBox="0 0 %v %v" role="img" aria-label="Questions by demand">`, v.Width, v.Height)
		for _, r := range v.Rows {
			w.f(`
<g class="question-row" data-demand="%v" data-state="%v" data-namespace="%v">
<title>%v</title>
<text x="0" y="%v">%v <tspan class="dim">%v</tspan></text>
<rect x="%v" y="%v" width="%v" height="14" rx="2" fill="%v"/>
<text class="dim" x="%v" y="%v">%v · %v`, r.Demand, r.State, r.Namespace, r.Title, r.TextY, r.Label, r.Namespace,
				v.BarX, r.BarY, r.W, r.Color, r.StateX, r.TextY, r.Demand, r.State)
			if r.Kind != "" {
				w.f(" (%v)", r.Kind)
			}
			w.s("</text>\n</g>")
		}
		w.s(`
</svg>
<p class="muted small">Bar length is demand; colour is the answer: green fresh, amber stale, grey unanswered. Read an answer with memory_answer.</p>`)
	}
	w.s("\n</section>")
}
