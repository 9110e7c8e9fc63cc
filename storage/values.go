package storage

import (
	"encoding/json"
	"strconv"

	"github.com/hearth-memory/hearth/storage/internal/sqlval"
)

// uniq returns ids without repeats or empty strings, first occurrence kept.
func uniq(ids []string) []string {
	out := make([]string, 0, len(ids))
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		if id != "" && !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// topicsJSON encodes topics for the records.topics column, "[]" when empty.
func topicsJSON(topics []string) string {
	if len(topics) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(topics) // a []string always marshals
	return string(b)
}

// jsonList encodes a string list for json_each(?); nil stays SQL NULL.
func jsonList(ss []string) any {
	if len(ss) == 0 {
		return nil
	}
	return sqlval.Strings(ss)
}

// jsonInts encodes an integer list for json_each(?).
func jsonInts(ns []int64) string {
	b := make([]byte, 0, 8*len(ns)+2)
	b = append(b, '[')
	for i, n := range ns {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, n, 10)
	}
	return string(append(b, ']'))
}
