package workers

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/hearth-memory/hearth/server/answers"
	"github.com/hearth-memory/hearth/storage"
)

// HandleAnswers makes w refresh standing answers (docs/design.md R-W3): it handles
// the answer jobs with c, and on each idle poll queues one, for the
// question with the highest demand that r says deserves an answer and has
// no fresh one, then runs it. So answers are made one per idle poll, never
// while other jobs are due, and never two at once. The model servers are
// probed from the same idle poll (models.Router.Poll probes only those
// due). Call it before Start.
func (w *Workers) HandleAnswers(c *answers.Composer, r storage.AnswerRefresh) {
	w.Handle(storage.KindAnswer, Answer(c))
	w.OnIdle(func(ctx context.Context) (bool, error) {
		if c.Models != nil && c.Models.Configured() {
			c.Models.Poll(ctx)
		}
		job, err := c.DB.QueueAnswer(ctx, r)
		return job != nil, err
	})
}

// Answer is the handler of answer jobs: it composes the answer of the
// job's question outside any transaction (the model call is slow) and
// stores it in the job's completion transaction (docs/design.md R-R6). A question
// purged meanwhile completes the job with nothing to store. On the job's
// last attempt a failed or refused model call gives way to an extractive
// answer.
func Answer(c *answers.Composer) Handler {
	return func(ctx context.Context, job *storage.Job) (Effects, error) {
		var p struct {
			QuestionID string `json:"question_id"`
		}
		if err := json.Unmarshal([]byte(job.Payload), &p); err != nil || p.QuestionID == "" {
			return nil, fmt.Errorf("answer job %s: payload holds no question_id", job.ID)
		}
		q, err := c.DB.Question(ctx, p.QuestionID)
		if storage.ErrorCode(err) == storage.NotFound {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		na, err := c.Compose(ctx, q, job.Attempts >= job.MaxAttempts)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context, tx *storage.JobTx) error {
			return tx.StoreAnswer(ctx, job.ID, na)
		}, nil
	}
}
