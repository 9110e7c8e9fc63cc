package server

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"strings"
	"time"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/screen"
)

// captureService implements memory_capture: the events the hooks capture,
// kept as observations without a model (docs/capture.md).
type captureService struct {
	hearthv1.UnimplementedCaptureServiceServer
	*Server
}

var _ hearthv1.CaptureServiceServer = (*captureService)(nil)

// Limits of memory_capture, from the proto.
var (
	maxCaptureEvents  = argInt(&hearthv1.CaptureRequest{}, "events", maxItems)
	maxCaptureSessID  = argInt(&hearthv1.CaptureEvent{}, "session_id", maxLength)
	maxCaptureHarness = argInt(&hearthv1.CaptureEvent{}, "harness", maxLength)
	maxCapturePath    = argInt(&hearthv1.CaptureEvent{}, "path", maxLength)
	maxCaptureCommand = argInt(&hearthv1.CaptureEvent{}, "command", maxLength)
	maxCaptureTests   = argInt(&hearthv1.CaptureEvent{}, "tests", maxItems)
	maxCaptureErrors  = argInt(&hearthv1.CaptureEvent{}, "errors", maxItems)
	maxCaptureLine    = argInt(&hearthv1.CaptureEvent{}, "tests", maxLength)
	maxCaptureSummary = argInt(&hearthv1.CaptureEvent{}, "summary", maxLength)
	captureKinds      = arg(&hearthv1.CaptureEvent{}, "kind").GetEnum()
)

// harnessName is a harness: lower-case letters, digits and dashes.
var harnessName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)

// Capture keeps a batch of captured events: all of them, or none when one
// is refused (a bad field, a screened secret), the error naming it.
func (c *captureService) Capture(ctx context.Context, r *hearthv1.CaptureRequest) (*hearthv1.CaptureResponse, error) {
	who, err := writer(ctx)
	if err != nil {
		return nil, err
	}
	evs := r.GetEvents()
	switch {
	case len(evs) == 0:
		return nil, c.fail(ctx, "", "", invalid("events", "is required: at least one event"))
	case len(evs) > maxCaptureEvents:
		return nil, c.fail(ctx, "", "", invalid("events", "has %d events; at most %d (send the rest in another call)", len(evs), maxCaptureEvents))
	}
	homes := map[[2]string]string{}
	out := make([]storage.CaptureEvent, len(evs))
	for i, ev := range evs {
		field := fieldIndex("events", i) + "."
		if err := checkCaptureEvent(field, ev); err != nil {
			return nil, c.fail(ctx, "", "", err)
		}
		k := [2]string{ev.GetNamespace(), ev.GetRemote()}
		home, ok := homes[k]
		if !ok {
			if home, _, err = c.resolve(field+"namespace", k[0], k[1], nil); err != nil {
				return nil, c.fail(ctx, "", "", prefixRemote(field, err))
			}
			homes[k] = home
		}
		se, err := screenCaptureEvent(field, ev)
		if err != nil {
			return nil, c.fail(ctx, home, "", err)
		}
		se.Namespace = home
		if se.At.IsZero() {
			se.At = time.Now()
		}
		out[i] = se
	}
	res, err := c.db.Capture(ctx, who, out)
	if err != nil {
		return nil, c.fail(ctx, "", "", err)
	}
	return &hearthv1.CaptureResponse{Accepted: uint32(res.Accepted), Replayed: uint32(res.Replayed),
		Observations: uint32(res.Observations)}, nil
}

// prefixRemote names an event's remote field in a resolve error, which
// calls it "remote".
func prefixRemote(field string, err error) error {
	var fe *fieldError
	if errors.As(err, &fe) && fe.field == "remote" {
		return invalid(field+"remote", "%s", fe.msg)
	}
	var ref *screen.Refusal
	if errors.As(err, &ref) && ref.Field == "remote" {
		return &screen.Refusal{Field: field + "remote", Pattern: ref.Pattern}
	}
	return err
}

// checkCaptureEvent validates one event but the screen and its namespace.
func checkCaptureEvent(field string, ev *hearthv1.CaptureEvent) error {
	if err := storage.CheckOpID(field+"id", ev.GetId()); err != nil {
		return err
	}
	if err := checkCaptureText(field+"session_id", ev.GetSessionId(), maxCaptureSessID, true); err != nil {
		return err
	}
	if h := ev.GetHarness(); h != "" && (len(h) > maxCaptureHarness || !harnessName.MatchString(h)) {
		return invalid(field+"harness", "must be at most %d of a-z, 0-9 and -", maxCaptureHarness)
	}
	kind := ev.GetKind()
	if !slices.Contains(captureKinds, kind) {
		return invalid(field+"kind", "must be one of %s", strings.Join(captureKinds, ", "))
	}
	if err := checkCaptureText(field+"path", ev.GetPath(), maxCapturePath, kind == storage.CaptureEdit); err != nil {
		return err
	}
	if p := ev.GetPath(); p != "" && (strings.HasPrefix(p, "/") || p == ".." || strings.HasPrefix(p, "../") || strings.Contains(p, "/../") || strings.Contains(p, "\\")) {
		return invalid(field+"path", "must be relative to the repository's top, with forward slashes and no ..")
	}
	if err := checkCaptureText(field+"command", ev.GetCommand(), maxCaptureCommand, kind == storage.CaptureCommand); err != nil {
		return err
	}
	for _, l := range []struct {
		name string
		list []string
		max  int
	}{{"tests", ev.GetTests(), maxCaptureTests}, {"errors", ev.GetErrors(), maxCaptureErrors}} {
		if len(l.list) > l.max {
			return invalid(field+l.name, "has %d entries; at most %d", len(l.list), l.max)
		}
		for j, v := range l.list {
			if err := checkCaptureText(fieldIndex(field+l.name, j), v, maxCaptureLine, true); err != nil {
				return err
			}
		}
	}
	if err := checkCaptureText(field+"summary", ev.GetSummary(), maxCaptureSummary, false); err != nil {
		return err
	}
	if at := ev.GetAt(); at != nil {
		if err := at.CheckValid(); err != nil {
			return invalid(field+"at", "is not a valid time")
		}
	}
	return nil
}

// checkCaptureText checks one line of captured text: at most max
// characters, and what checkText allows on one line; required when need is
// set.
func checkCaptureText(field, s string, max int, need bool) error {
	if strings.TrimSpace(s) == "" && need {
		return invalid(field, "is required")
	}
	return checkBounded(field, s, false, max)
}

// screenCaptureEvent screens every text of an event, as every stored field
// is; a refusal names the field.
func screenCaptureEvent(field string, ev *hearthv1.CaptureEvent) (storage.CaptureEvent, error) {
	out := storage.CaptureEvent{ID: ev.GetId(), Harness: ev.GetHarness(), Kind: ev.GetKind(),
		Created: ev.GetCreated(), OK: ev.GetOk(), ExitCode: int(ev.GetExitCode())}
	if ev.GetAt() != nil {
		out.At = ev.GetAt().AsTime()
	}
	var err error
	for _, t := range []struct {
		name string
		v    string
		dst  *screen.Text
	}{{"session_id", ev.GetSessionId(), &out.SessionID}, {"path", ev.GetPath(), &out.Path},
		{"command", ev.GetCommand(), &out.Command}, {"summary", ev.GetSummary(), &out.Summary}} {
		if *t.dst, err = screen.Check(field+t.name, t.v); err != nil {
			return out, err
		}
	}
	if out.Tests, err = screen.CheckAll(field+"tests", ev.GetTests()); err != nil {
		return out, err
	}
	if out.Errors, err = screen.CheckAll(field+"errors", ev.GetErrors()); err != nil {
		return out, err
	}
	return out, nil
}
