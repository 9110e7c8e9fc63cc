package storage

import "context"

// JobStates lists the states a job can be in.
var JobStates = []string{JobQueued, JobLeased, JobDone, JobFailed}

// JobCount is the number of jobs of one kind in one state.
type JobCount struct {
	Kind  string
	State string
	N     int
}

// JobCounts counts the jobs by kind and state (sorted by both), for the
// queue depth the metrics report.
func (db *DB) JobCounts(ctx context.Context) ([]JobCount, error) {
	var out []JobCount
	err := db.read(ctx, "job counts", func(tx *txn) error {
		rows, err := tx.QueryContext(ctx, `SELECT kind, state, COUNT(*) FROM jobs GROUP BY kind, state ORDER BY kind, state`)
		if err != nil {
			return classify("job counts", err)
		}
		defer rows.Close()
		var list []JobCount
		for rows.Next() {
			var c JobCount
			if err := rows.Scan(&c.Kind, &c.State, &c.N); err != nil {
				return classify("job counts", err)
			}
			list = append(list, c)
		}
		out = list
		return classify("job counts", rows.Err())
	})
	return out, err
}
