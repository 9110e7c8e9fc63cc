package server

import (
	"context"
	"fmt"
	"strings"
	"time"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"github.com/hearth-memory/hearth/server/models"
	"github.com/hearth-memory/hearth/storage/screen"
)

// budgetDay is the model budget's day now: the router's, or the local date
// of the store's clock when the server has no router.
func (a *adminService) budgetDay() (day string, paused bool) {
	if a.models == nil {
		return models.Day(a.db.Now(), time.Local), false
	}
	b := a.models.Budget()
	return b.Day, b.Paused
}

// ModelPause pauses model calls (memory_model_pause, admin scope): the
// pause is stored with an audit row "model.pause", so it outlasts a
// restart, and the router sends no call from now on; model jobs wait,
// queued (docs/operations.md, "Model budget"). Without a model server the
// pause is stored all the same, for when one is configured. Pausing twice
// changes nothing the second time.
func (a *adminService) ModelPause(ctx context.Context, _ *hearthv1.ModelPauseRequest) (*hearthv1.ModelPauseResponse, error) {
	day, paused := a.budgetDay()
	if paused {
		return &hearthv1.ModelPauseResponse{}, nil
	}
	if err := a.db.PauseModels(ctx, true, day, client(ctx), screen.Redact("model calls paused")); err != nil {
		return nil, toStatus(ctx, a.log, err)
	}
	if a.models != nil {
		a.models.SetPaused(true)
	}
	a.log.InfoContext(ctx, "model calls paused", "by", client(ctx))
	return &hearthv1.ModelPauseResponse{Paused: true}, nil
}

// ModelResume resumes model calls and starts today's budget over for every
// server (memory_model_resume, admin scope), with an audit row
// "model.resume" naming what each server had spent.
func (a *adminService) ModelResume(ctx context.Context, _ *hearthv1.ModelResumeRequest) (*hearthv1.ModelResumeResponse, error) {
	day, paused := a.budgetDay()
	resp := &hearthv1.ModelResumeResponse{Resumed: paused}
	parts := []string{}
	if a.models != nil {
		for _, s := range a.models.Status().Servers {
			resp.Spent = append(resp.Spent, &hearthv1.ModelServerSpent{Url: s.URL, Calls: uint64(s.Today.Calls), Tokens: uint64(s.Today.Tokens())})
			parts = append(parts, fmt.Sprintf("%s %d calls, %d tokens", s.URL, s.Today.Calls, s.Today.Tokens()))
		}
	}
	detail := "model calls resumed; the day's budget starts over (spent on " + day + ": " + strings.Join(parts, "; ") + ")"
	if err := a.db.PauseModels(ctx, false, day, client(ctx), screen.Redact(detail)); err != nil {
		return nil, toStatus(ctx, a.log, err)
	}
	if a.models != nil {
		a.models.SetPaused(false)
		a.models.StartOver()
	}
	a.log.InfoContext(ctx, "model calls resumed", "by", client(ctx))
	return resp, nil
}
