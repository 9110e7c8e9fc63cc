package hook

import "context"

// HandoffSource finds "where we left off" for a session that starts: the
// summary of the last session closed for the same repository by another
// session or harness. nil, nil means there is none.
type HandoffSource interface {
	Handoff(ctx context.Context, c *Client, sc Scope, in Input) (*Handoff, error)
}

// RESTHandoffs asks the server's memory_handoff route:
//
//	POST /api/memory_handoff {"namespace"|"remote", "session_id"}
//	→ {"handoff": {"op_id", "session_id", "client", "closed_at", "summary"}}
//
// with no handoff key when there is none. A server without the route
// (404 "no route") has no handoffs: that is not an error.
type RESTHandoffs struct{}

// Handoff implements HandoffSource.
func (RESTHandoffs) Handoff(ctx context.Context, c *Client, sc Scope, in Input) (*Handoff, error) {
	var out struct {
		Handoff *Handoff `json:"handoff"`
	}
	err := c.CallScoped(ctx, "memory_handoff", sc, map[string]any{"session_id": in.SessionID}, &out)
	if RouteMissing(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return out.Handoff, nil
}

var _ HandoffSource = RESTHandoffs{}
