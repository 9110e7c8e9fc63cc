// Package hatest runs, for tests, a server that answers as the Supervisor's
// proxy to Home Assistant's REST API does, over TCP on 127.0.0.1:0:
// GET /core/api/states (every state object) and
// GET /core/api/states/<entity_id> (one, or 404), with the bearer check,
// Home Assistant's real state-object shape (entity_id, state, attributes,
// last_changed, last_reported, last_updated, context) and its error bodies.
// A test sets the entities, scripts failures (401, 502, any status, a slow
// or a hung answer, a malformed body) and counts the requests.
package hatest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// Server is a running test Supervisor.
type Server struct {
	// URL is the base URL to give Hearth in place of http://supervisor.
	URL string
	// Token is the SUPERVISOR_TOKEN it accepts.
	Token string

	srv     *httptest.Server
	mu      sync.Mutex
	states  map[string]string
	body    []byte // cached /core/api/states document; nil when stale
	status  int
	delay   time.Duration
	hang    bool
	raw     string
	reqs    []string
	stopped chan struct{}
}

// changed is when every entity last changed: a fixed time, as the tests
// never read it.
var changed = time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC)

// New starts a server that accepts token; it stops when the test ends.
func New(tb testing.TB, token string) *Server {
	tb.Helper()
	s := &Server{Token: token, states: map[string]string{}, stopped: make(chan struct{})}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	tb.Cleanup(s.Close)
	return s
}

// Close stops the server, releasing hung requests first.
func (s *Server) Close() {
	s.mu.Lock()
	select {
	case <-s.stopped:
	default:
		close(s.stopped)
	}
	s.mu.Unlock()
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// Set sets an entity's state ("on", "unavailable", "unknown", "21.5" …),
// adding the entity when it is new.
func (s *Server) Set(entityID, state string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.states[entityID] = state
	s.body = nil
}

// Remove removes entities, as deleting or renaming them in Home Assistant
// does.
func (s *Server) Remove(entityIDs ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range entityIDs {
		delete(s.states, id)
	}
	s.body = nil
}

// Fail answers every request with status and Home Assistant's error body
// for it; 0 answers normally again.
func (s *Server) Fail(status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status = status
}

// Delay answers every request after d (a slow Home Assistant); 0 for none.
func (s *Server) Delay(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.delay = d
}

// Hang makes every request wait until the client gives up or the server
// stops (a hung Home Assistant); false answers again.
func (s *Server) Hang(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hang = on
}

// Body answers 200 with exactly these bytes (a malformed answer); "" for
// the real document.
func (s *Server) Body(raw string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.raw = raw
}

// Render builds the states document now rather than at the next request,
// so that a benchmark times Hearth's work and not this server's.
func (s *Server) Render() { s.document() }

// Requests returns the paths of every request received, in order.
func (s *Server) Requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.reqs...)
}

// state is Home Assistant's state object (homeassistant.core.State.as_dict).
type state struct {
	EntityID     string         `json:"entity_id"`
	State        string         `json:"state"`
	Attributes   map[string]any `json:"attributes"`
	LastChanged  time.Time      `json:"last_changed"`
	LastReported time.Time      `json:"last_reported"`
	LastUpdated  time.Time      `json:"last_updated"`
	Context      stateContext   `json:"context"`
}

type stateContext struct {
	ID       string  `json:"id"`
	ParentID *string `json:"parent_id"`
	UserID   *string `json:"user_id"`
}

func object(id, st string) state {
	domain, object, _ := strings.Cut(id, ".")
	attrs := map[string]any{"friendly_name": strings.ReplaceAll(object, "_", " ")}
	switch domain {
	case "sensor":
		attrs["unit_of_measurement"] = "°C"
		attrs["device_class"] = "temperature"
		attrs["state_class"] = "measurement"
	case "binary_sensor":
		attrs["device_class"] = "door"
	case "light":
		attrs["supported_color_modes"] = []string{"brightness"}
		attrs["color_mode"] = "brightness"
		attrs["brightness"] = 180
	}
	return state{EntityID: id, State: st, Attributes: attrs, LastChanged: changed, LastReported: changed,
		LastUpdated: changed, Context: stateContext{ID: fmt.Sprintf("01JD%022d", len(id))}}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.reqs = append(s.reqs, r.URL.Path)
	status, delay, hang, raw := s.status, s.delay, s.hang, s.raw
	s.mu.Unlock()

	if hang {
		select {
		case <-r.Context().Done():
		case <-s.stopped:
		}
		return
	}
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		case <-s.stopped:
			return
		}
	}
	// The Supervisor checks the add-on's token before proxying.
	if r.Header.Get("Authorization") != "Bearer "+s.Token {
		httpError(w, http.StatusUnauthorized)
		return
	}
	if status != 0 {
		httpError(w, status)
		return
	}
	if r.Method != http.MethodGet {
		httpError(w, http.StatusMethodNotAllowed)
		return
	}
	switch {
	case r.URL.Path == "/core/api/states":
		if raw != "" {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(raw))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(s.document())
	case strings.HasPrefix(r.URL.Path, "/core/api/states/"):
		id := strings.TrimPrefix(r.URL.Path, "/core/api/states/")
		s.mu.Lock()
		st, ok := s.states[id]
		s.mu.Unlock()
		if !ok {
			// Home Assistant's body for an unknown entity.
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"message":"Entity not found."}`))
			return
		}
		b, _ := json.Marshal(object(id, st))
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
	default:
		httpError(w, http.StatusNotFound)
	}
}

// document renders every state, sorted by entity id; it is cached until
// the states change, so a benchmark measures Hearth rather than this server.
func (s *Server) document() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.body != nil {
		return s.body
	}
	ids := make([]string, 0, len(s.states))
	for id := range s.states {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	list := make([]state, len(ids))
	for i, id := range ids {
		list[i] = object(id, s.states[id])
	}
	s.body, _ = json.Marshal(list)
	return s.body
}

// httpError writes the plain-text body aiohttp (Home Assistant and the
// Supervisor) gives a bare error status, e.g. "401: Unauthorized".
func httpError(w http.ResponseWriter, status int) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	fmt.Fprintf(w, "%d: %s", status, http.StatusText(status))
}
