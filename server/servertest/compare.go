package servertest

import (
	"fmt"

	"github.com/hearth-memory/hearth/storage"
)

// SameRecords compares two memory_status answers but for their store
// field: the disk's free space and the WAL's size move with every audit
// row, refusals included, while the records must not.
func SameRecords(a, b Result) bool {
	strip := func(r Result) string {
		m := map[string]any{}
		for k, v := range r.Body {
			switch k {
			case "store":
			case "jobs":
				// The answer worker queues and runs an answer's refresh
				// on its idle polls, by itself; other jobs (extraction)
				// move from queued to leased to done by themselves, and
				// a write would add one.
				perKind := map[string]float64{}
				for _, j := range v.([]any) {
					j := j.(map[string]any)
					if kind := j["kind"].(string); kind != storage.KindAnswer {
						perKind[kind] += j["count"].(float64)
					}
				}
				m[k] = perKind
			default:
				m[k] = v
			}
		}
		return fmt.Sprint(m)
	}
	return a.OK && b.OK && strip(a) == strip(b)
}

// diskFigures are the keys of memory_status's store field that move
// between two calls of a parity pair by themselves: the disk's free space
// (other processes write to it), the WAL's size and its checkpoints (the
// usage flusher writes every second).
var diskFigures = map[string]bool{"free_mib": true, "total_mib": true, "wal_kib": true,
	"checkpoints": true, "checkpoint_max_ms": true, "checkpoint_total_ms": true, "checkpoints_unfinished": true}

// WithoutDiskFigures is a memory_status answer's body with the store
// field's diskFigures left out, or nil if it has no store field.
func WithoutDiskFigures(body map[string]any) map[string]any {
	store, _ := body["store"].(map[string]any)
	if store == nil {
		return nil
	}
	m := map[string]any{}
	for k, v := range body {
		m[k] = v
	}
	s := map[string]any{}
	for k, v := range store {
		if !diskFigures[k] {
			s[k] = v
		}
	}
	m["store"] = s
	return m
}

// SameButDisk reports whether two memory_status answers agree but for
// diskFigures.
func SameButDisk(a, b Result) bool {
	sa := WithoutDiskFigures(a.Body)
	return sa != nil && fmt.Sprint(sa) == fmt.Sprint(WithoutDiskFigures(b.Body))
}
