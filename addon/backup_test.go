package addon

import (
	"path"
	"strings"
	"testing"
)

// excluded reports whether the Supervisor leaves file (a path under /data)
// out of a backup: it tests each backup_exclude pattern with Python's
// PurePath.match, which matches a relative pattern against the path's
// last components, one glob per component.
func excluded(patterns []string, file string) bool {
	parts := strings.Split(strings.Trim(file, "/"), "/")
	for _, p := range patterns {
		pp := strings.Split(p, "/")
		if len(pp) > len(parts) {
			continue
		}
		tail := parts[len(parts)-len(pp):]
		match := true
		for i := range pp {
			if ok, _ := path.Match(pp[i], tail[i]); !ok {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}

// TestBackupExclude holds what Home Assistant's backup of the add-on
// holds: the database with its WAL, the tokens and the options, and not
// the rebuilt or duplicated files. A directory left out takes its
// contents with it.
func TestBackupExclude(t *testing.T) {
	t.Parallel()
	cfg := config(t)
	if cfg["backup"] != "cold" {
		t.Errorf("backup = %v, want cold (see the comment in config.yaml)", cfg["backup"])
	}
	var patterns []string
	for _, p := range cfg["backup_exclude"].([]any) {
		patterns = append(patterns, p.(string))
	}
	for _, f := range []string{"/data/hearth.db", "/data/hearth.db-wal", "/data/tokens/codex", "/data/options.json"} {
		if excluded(patterns, f) {
			t.Errorf("%s is left out of the backup", f)
		}
	}
	for _, f := range []string{"/data/hearth.db-shm", "/data/hearth.db.lock", "/data/backups/hearth-20261201T101500.000Z.db",
		"/data/backups/before-restore-20261201T101500Z"} {
		if !excluded(patterns, f) {
			t.Errorf("%s is in the backup", f)
		}
	}
}
