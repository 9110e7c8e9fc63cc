package hook

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"time"

	"github.com/hearth-memory/hearth/storage/screen"
)

// maxLogBytes is the size at which the hook log is rotated to hook.log.1.
const maxLogBytes = 1 << 20

// logger appends lines to CacheDir/hook.log (0600), opening the file only
// when there is something to write: a hook that succeeds touches nothing.
type logger struct {
	path   string
	prefix string
	now    func() time.Time
	f      *os.File
	failed bool
}

func newLogger(cacheDir string, h Harness, event string, now func() time.Time) *logger {
	return &logger{path: filepath.Join(cacheDir, "hook.log"), prefix: fmt.Sprintf("%s %s[%d]", h, event, os.Getpid()), now: now}
}

// printf writes one line. Every line passes the secret screen's redaction,
// so a secret that slipped into an error text is logged as [screened:…].
func (l *logger) printf(format string, args ...any) {
	if l.failed {
		return
	}
	if l.f == nil {
		if err := os.MkdirAll(filepath.Dir(l.path), 0o700); err != nil {
			l.failed = true
			return
		}
		if fi, err := os.Stat(l.path); err == nil && fi.Size() > maxLogBytes {
			_ = os.Rename(l.path, l.path+".1")
		}
		f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			l.failed = true
			return
		}
		l.f = f
	}
	msg := screen.Redact(fmt.Sprintf(format, args...)).String()
	fmt.Fprintf(l.f, "%s %s: %s\n", l.now().UTC().Format(time.RFC3339), l.prefix, msg)
}

func (l *logger) close() {
	if l.f != nil {
		l.f.Close()
	}
}

// lazyRegexp compiles expr on its first use: a hook process runs once and
// uses few of the package's expressions, and compiling them all at init
// would cost every hook (and every other hearth command) their time.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
