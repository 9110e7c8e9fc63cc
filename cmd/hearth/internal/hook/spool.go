package hook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Limits of the spool.
const (
	// SpoolMaxAge is how long a spooled call is retried before it is dropped.
	SpoolMaxAge = 7 * 24 * time.Hour
	// SpoolMaxAttempts is how many failed deliveries drop a spooled call.
	SpoolMaxAttempts = 30
	// SpoolMaxEntries bounds the spool; a new call past it is refused.
	SpoolMaxEntries = 1000
	// spoolCallTimeout bounds one delivery attempt of the drainer.
	spoolCallTimeout = 10 * time.Second
)

// Spooled is one call waiting for delivery: which tool, its JSON arguments,
// when it was spooled and how often delivery failed. Spooled calls must be
// safe to replay (memory_session_close is, through its op_id receipt).
type Spooled struct {
	Tool     string          `json:"tool"`
	Args     json.RawMessage `json:"args"`
	Created  time.Time       `json:"created"`
	Attempts int             `json:"attempts,omitempty"`
	// LastError is why the last delivery failed (never a token or argument).
	LastError string `json:"last_error,omitempty"`
}

// Spool is a directory of calls waiting for delivery, one file each,
// written atomically with mode 0600.
type Spool struct {
	Dir string
	Now func() time.Time
}

// spoolKey is a spool file's name stem: a caller's idempotency key.
var spoolKey = lazyRegexp(`^[A-Za-z0-9_-]{8,64}$`)

// Put spools one call under key (an op_id). Putting the same key again
// replaces the file with the same call, so a hook run twice spools once.
func (s *Spool) Put(key, tool string, args any) error {
	if !spoolKey().MatchString(key) {
		return fmt.Errorf("spool key %q: want 8-64 of A-Za-z0-9_-", key)
	}
	n, err := s.pending()
	if err != nil {
		return err
	}
	path := filepath.Join(s.Dir, key+".json")
	if _, err := os.Stat(path); err == nil {
		return nil // already waiting; its first copy is as good
	}
	if len(n) >= SpoolMaxEntries {
		return fmt.Errorf("spool holds %d calls already; not spooling more", len(n))
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return err
	}
	b, err := json.Marshal(Spooled{Tool: tool, Args: raw, Created: s.Now().UTC()})
	if err != nil {
		return err
	}
	return writeFileAtomic(path, b)
}

// pending lists the spooled keys, oldest file first.
func (s *Spool) pending() ([]string, error) {
	entries, err := os.ReadDir(s.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	type kt struct {
		key string
		t   time.Time
	}
	var list []kt
	for _, e := range entries {
		key, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || !spoolKey().MatchString(key) || !e.Type().IsRegular() {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		list = append(list, kt{key, fi.ModTime()})
	}
	slices.SortFunc(list, func(a, b kt) int { return a.t.Compare(b.t) })
	keys := make([]string, len(list))
	for i, k := range list {
		keys[i] = k.key
	}
	return keys, nil
}

// Due reports whether a call waits in the spool that no drainer has tried
// yet, or whose last failed delivery is older than backoff: a hook run
// then starts a drainer.
func (s *Spool) Due(now time.Time, backoff time.Duration) bool {
	keys, err := s.pending()
	if err != nil {
		return false
	}
	for _, key := range keys {
		path := filepath.Join(s.Dir, key+".json")
		fi, err := os.Stat(path)
		if err != nil {
			continue
		}
		if now.Sub(fi.ModTime()) > backoff {
			return true
		}
		b, err := os.ReadFile(path)
		var sp Spooled
		if err == nil && json.Unmarshal(b, &sp) == nil && sp.Attempts == 0 {
			return true
		}
	}
	return false
}

// DrainResult counts what one drain did.
type DrainResult struct {
	Delivered, Dropped, Kept int
}

// Drain delivers the spooled calls through c, oldest first. Only one drain
// runs at a time (a lock file); a drain that finds the lock taken returns at
// once, and the holder picks up what was spooled meanwhile: it looks again
// after letting go of the lock. A delivered call is removed; a call the
// server refuses for good (a 4xx other than 401, 408 and 429) is dropped and
// logged; others are kept for the next drain, until SpoolMaxAttempts or
// SpoolMaxAge. log receives one line per drop or failure.
func (s *Spool) Drain(ctx context.Context, c *Client, log func(string, ...any)) (DrainResult, error) {
	var res DrainResult
	tried := map[string]bool{}
	for {
		unlock, ok, err := s.lock()
		if err != nil || !ok {
			return res, err
		}
		err = s.drainOnce(ctx, c, log, tried, &res)
		unlock()
		if err != nil {
			return res, err
		}
		// A call spooled while we held the lock found it taken and left
		// it to us: look again now that the lock is free.
		keys, err := s.pending()
		if err != nil {
			return res, err
		}
		if !slices.ContainsFunc(keys, func(k string) bool { return !tried[k] }) {
			return res, nil
		}
	}
}

func (s *Spool) drainOnce(ctx context.Context, c *Client, log func(string, ...any), tried map[string]bool, res *DrainResult) error {
	keys, err := s.pending()
	if err != nil {
		return err
	}
	for _, key := range keys {
		if tried[key] {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		tried[key] = true
		switch s.deliver(ctx, c, key, log) {
		case outcomeDelivered:
			res.Delivered++
		case outcomeDropped:
			res.Dropped++
		default:
			res.Kept++
		}
	}
	return nil
}

type outcome int

const (
	outcomeKept outcome = iota
	outcomeDelivered
	outcomeDropped
)

// deliver sends one spooled call and settles its file.
func (s *Spool) deliver(ctx context.Context, c *Client, key string, log func(string, ...any)) outcome {
	path := filepath.Join(s.Dir, key+".json")
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return outcomeDelivered // another drainer settled it
	}
	var sp Spooled
	if err != nil || json.Unmarshal(b, &sp) != nil || sp.Tool == "" || len(sp.Args) == 0 {
		log("spool: dropped unreadable entry %s", key)
		os.Remove(path)
		return outcomeDropped
	}
	if age := s.Now().Sub(sp.Created); age > SpoolMaxAge || sp.Attempts >= SpoolMaxAttempts {
		log("spool: dropped %s %s after %d attempts over %s; last error: %s", sp.Tool, key, sp.Attempts, age.Round(time.Minute), sp.LastError)
		os.Remove(path)
		return outcomeDropped
	}
	cctx, cancel := context.WithTimeout(ctx, spoolCallTimeout)
	var reply map[string]json.RawMessage
	err = c.Call(cctx, sp.Tool, sp.Args, &reply)
	cancel()
	if err == nil && sp.Tool == "memory_session_close" && reply["receipt"] == nil {
		// Only a receipt proves the close: a 200 without one came from
		// something that is not Hearth.
		err = errors.New("reply holds no receipt")
	}
	if err == nil {
		os.Remove(path)
		return outcomeDelivered
	}
	var ae *APIError
	if errors.As(err, &ae) && permanent(ae.Status) {
		log("spool: dropped %s %s, refused by the server: %v", sp.Tool, key, err)
		os.Remove(path)
		return outcomeDropped
	}
	sp.Attempts++
	sp.LastError = err.Error()
	log("spool: kept %s %s for later (attempt %d): %v", sp.Tool, key, sp.Attempts, err)
	if nb, merr := json.Marshal(sp); merr == nil {
		if _, serr := os.Stat(path); serr == nil {
			_ = writeFileAtomic(path, nb)
		}
	}
	return outcomeKept
}

// permanent reports whether an HTTP status refuses a call for good: a
// replay would be refused the same way.
func permanent(status int) bool {
	switch status {
	case http.StatusUnauthorized, http.StatusRequestTimeout, http.StatusTooManyRequests:
		return false
	}
	return status >= 400 && status < 500
}

// SendBatch sends the events waiting in a capture spool to memory_capture,
// oldest first, up to maxCaptureBatch a call, until the spool is empty, ctx
// ends or a call fails. Only one sender runs at a time (the spool's lock):
// one that finds the lock taken returns at once, and the holder looks again
// before it lets go. A delivered event's file is removed; when the server
// refuses a batch for good, each event of it is sent alone and only the
// refused one is dropped. A failed delivery counts no attempt: an event
// waits until the server is back or SpoolMaxAge has passed. Replays are
// harmless: the server keeps an event id once.
func (s *Spool) SendBatch(ctx context.Context, c *Client) error {
	unlock, ok, err := s.lock()
	if err != nil || !ok {
		return err
	}
	defer unlock()
	for {
		keys, err := s.pending()
		if err != nil || len(keys) == 0 {
			return err
		}
		sent := 0
		for len(keys) > 0 {
			n := min(len(keys), maxCaptureBatch)
			batch, paths := s.readBatch(keys[:n])
			keys = keys[n:]
			if len(batch) == 0 {
				continue
			}
			if err := s.sendEvents(ctx, c, batch, paths); err != nil {
				return err
			}
			sent += len(batch)
		}
		if sent == 0 {
			return nil
		}
	}
}

// readBatch reads spooled events; an unreadable or expired one is removed.
func (s *Spool) readBatch(keys []string) ([]json.RawMessage, []string) {
	var batch []json.RawMessage
	var paths []string
	for _, key := range keys {
		path := filepath.Join(s.Dir, key+".json")
		b, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		var sp Spooled
		if err != nil || json.Unmarshal(b, &sp) != nil || len(sp.Args) == 0 || s.Now().Sub(sp.Created) > SpoolMaxAge {
			os.Remove(path)
			continue
		}
		batch = append(batch, sp.Args)
		paths = append(paths, path)
	}
	return batch, paths
}

// sendEvents delivers one batch and settles its files.
func (s *Spool) sendEvents(ctx context.Context, c *Client, batch []json.RawMessage, paths []string) error {
	err := c.Call(ctx, captureTool, map[string]any{"events": batch}, nil)
	var ae *APIError
	switch {
	case err == nil:
	case errors.As(err, &ae) && permanent(ae.Status) && len(batch) > 1:
		for i := range batch {
			if err := s.sendEvents(ctx, c, batch[i:i+1], paths[i:i+1]); err != nil {
				return err
			}
		}
		return nil
	case errors.As(err, &ae) && permanent(ae.Status):
		// Refused for good (e.g. a server without memory_capture): a
		// replay would be refused the same way.
	default:
		return err
	}
	for _, p := range paths {
		os.Remove(p)
	}
	return nil
}
