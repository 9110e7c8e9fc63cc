package jobq

// The queue's SQL, all of it: the jobs table and the anchor_sweeps log
// (migrations 0003 and 0030). Times are unix milliseconds. A second
// engine (PostgreSQL, docs/postgres.md) rewrites what differs here and
// nowhere else.

// columns are the jobs columns scan reads, in its order.
const columns = `id, kind, COALESCE(key, ''), payload, state, attempts, max_attempts, lease_owner,
	lease_expires_at, run_after, last_error, created_at, updated_at, done_at`

// selectJobs starts every query that reads whole jobs.
const selectJobs = `SELECT ` + columns + ` FROM jobs `

const (
	sqlByKey = selectJobs + `WHERE key = ?`
	sqlByID  = selectJobs + `WHERE id = ?`
	// sqlList takes a kind (?1) and a state (?2), each "" for any.
	sqlList = selectJobs + `WHERE (?1 = '' OR kind = ?1) AND (?2 = '' OR state = ?2) ORDER BY created_at, id`
	// sqlLeasedElsewhere takes the owner whose leases stay.
	sqlLeasedElsewhere = selectJobs + `WHERE state = 'leased' AND lease_owner <> ?`
	// sqlOwnersElsewhere lists the other owners of leases.
	sqlOwnersElsewhere = `SELECT DISTINCT lease_owner FROM jobs WHERE state = 'leased' AND lease_owner <> ? ORDER BY lease_owner`

	sqlInsert = `
		INSERT INTO jobs (id, kind, key, payload, state, max_attempts, run_after, created_at, updated_at)
		VALUES (?, ?, ?, ?, 'queued', ?, ?, ?, ?)`
)

// leasable is the condition, over jobs, for a job a worker may take now
// (?1): queued and due, or leased under a lease that has run out, of one
// of the kinds in the JSON list ?2.
const leasable = `((state = 'queued' AND run_after <= ?1) OR (state = 'leased' AND lease_expires_at <= ?1))
	AND kind IN (SELECT value FROM json_each(?2))`

const (
	// sqlDue asks, outside any write, whether a job is leasable.
	sqlDue = `SELECT EXISTS (SELECT 1 FROM jobs WHERE ` + leasable + `)`
	// sqlNext picks the job to lease. SQLite's single writer makes it
	// exclusive.
	sqlNext = selectJobs + `WHERE ` + leasable + ` ORDER BY run_after, id LIMIT 1`
	// sqlNextSkipLocked is sqlNext on PostgreSQL: it locks the row it
	// picks and passes over a row another front end's lease has locked,
	// so that two leasing at once pick two jobs (docs/postgres.md,
	// "The job lease").
	sqlNextSkipLocked = sqlNext + ` FOR UPDATE SKIP LOCKED`
	// sqlLease takes the owner, the lease's end, now and the id.
	sqlLease = `
		UPDATE jobs SET state = 'leased', attempts = attempts + 1, lease_owner = ?, lease_expires_at = ?, updated_at = ?
		WHERE id = ?`
	// sqlHoldsLease counts the job (id, owner, attempt) if it still holds
	// its lease.
	sqlHoldsLease = `
		SELECT COUNT(*) FROM jobs WHERE id = ? AND state = 'leased' AND lease_owner = ? AND attempts = ?`
	// sqlFinish takes the final state, last_error, now twice and the id.
	sqlFinish = `
		UPDATE jobs SET state = ?, lease_owner = '', lease_expires_at = NULL, last_error = ?,
			updated_at = ?, done_at = ?
		WHERE id = ?`
	// sqlRequeue takes run_after, last_error, now and the id.
	sqlRequeue = `
		UPDATE jobs SET state = 'queued', lease_owner = '', lease_expires_at = NULL,
			run_after = ?, last_error = ?, updated_at = ?
		WHERE id = ?`
	// sqlDefer is sqlRequeue giving the attempt back.
	sqlDefer = `
		UPDATE jobs SET state = 'queued', attempts = attempts - 1, lease_owner = '', lease_expires_at = NULL,
			run_after = ?, last_error = ?, updated_at = ?
		WHERE id = ?`
	// sqlCancel takes the kind and the key to keep ("": none);
	// sqlCancelFuture adds now, for the jobs not yet due.
	sqlCancel       = `DELETE FROM jobs WHERE kind = ?1 AND state = 'queued' AND attempts = 0 AND (?2 = '' OR COALESCE(key, '') <> ?2)`
	sqlCancelFuture = sqlCancel + ` AND run_after > ?3`
	sqlPurgeDone    = `DELETE FROM jobs WHERE state = 'done' AND done_at <= ?`
	sqlNextRun      = `SELECT MIN(run_after) FROM jobs WHERE kind = ? AND state = 'queued'`
	sqlPending      = `SELECT EXISTS (SELECT 1 FROM jobs WHERE kind = ? AND state IN ('queued', 'leased'))`
	sqlCounts       = `SELECT kind, state, COUNT(*) FROM jobs GROUP BY kind, state ORDER BY kind, state`
)

// The anchor sweeps' log.
const (
	sqlInsertSweep = `
		INSERT INTO anchor_sweeps (at, requested_by, home_assistant, unreachable, detail,
			checked, changed, available, unavailable, unknown)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	// sqlTrimSweeps takes how many sweeps to keep.
	sqlTrimSweeps = `
		DELETE FROM anchor_sweeps WHERE seq <= (SELECT MAX(seq) FROM anchor_sweeps) - ?`
	sqlLastSweep = `
		SELECT at, requested_by, home_assistant, unreachable, detail, checked, changed, available, unavailable, unknown
		FROM anchor_sweeps ORDER BY seq DESC LIMIT 1`
)
