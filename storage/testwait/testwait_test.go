package testwait

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestWaitFor(t *testing.T) {
	t.Parallel()
	t.Run("OKHoldsLater", func(t *testing.T) {
		t.Parallel()
		calls := 0
		WaitFor(t, "the fifth look", func() bool { calls++; return calls == 5 })
		if calls != 5 {
			t.Errorf("cond called %d times, want 5 (WaitFor returns once it holds)", calls)
		}
	})
	t.Run("OKHoldsAtOnce", func(t *testing.T) {
		t.Parallel()
		calls := 0
		WaitFor(t, "the first look", func() bool { calls++; return true })
		if calls != 1 {
			t.Errorf("cond called %d times, want 1", calls)
		}
	})
	t.Run("ErrTimeout", func(t *testing.T) {
		t.Parallel()
		tb := &recorder{TB: t}
		done := make(chan struct{})
		start := time.Now()
		go func() {
			defer close(done)
			waitFor(tb, "the sky falls", func() bool { return false }, 50*time.Millisecond)
		}()
		<-done
		if !strings.Contains(tb.fatal, "waiting until the sky falls") {
			t.Errorf("failure %q does not name what it waited for", tb.fatal)
		}
		if d := time.Since(start); d < 50*time.Millisecond {
			t.Errorf("failed after %v, before the timeout", d)
		}
	})
}

// recorder keeps what Fatalf says and ends the goroutine, as testing.T's
// Fatalf does, without failing the test that runs it.
type recorder struct {
	testing.TB
	fatal string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
