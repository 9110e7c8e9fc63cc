package workers

import (
	"context"
)

// IdleFunc is asked for work on each idle poll (a poll that found no due
// job): it may queue one job and says whether it did. There is no
// scheduler behind it: background work that has no time of its own, such
// as refreshing standing answers, advances one job per idle poll.
type IdleFunc func(ctx context.Context) (queued bool, err error)

// OnIdle registers f to be asked on each idle poll, after those registered
// before it. Call it before Start.
func (w *Workers) OnIdle(f IdleFunc) {
	w.idle = append(w.idle, f)
}

// Idle is one idle poll's work: it asks the idle functions in registration
// order until one queues a job, and runs that job at once. It reports
// whether a job ran; an error is an idle function's or the queue's own.
// The runner calls it whenever a poll finds no due job; tests call it to
// drive one idle poll.
func (w *Workers) Idle(ctx context.Context) (ran bool, err error) {
	for _, f := range w.idle {
		queued, err := f(ctx)
		if err != nil {
			return false, err
		}
		if queued {
			return w.RunOnce(ctx)
		}
	}
	return false, nil
}

// idlePoll runs Idle for the runner, logging its error.
func (w *Workers) idlePoll(ctx context.Context) {
	if _, err := w.Idle(ctx); err != nil && ctx.Err() == nil {
		w.log.ErrorContext(ctx, "idle work", "err", err)
	}
}
