package anchors

// The statements of the anchors table, in the forms both engines read
// (docs/postgres.md).

const (
	sqlLoad = `
		SELECT record_id, anchor, state, checked_at, checked_by, detail FROM anchors
		WHERE record_id IN (SELECT value FROM json_each(?))
		ORDER BY record_id, position`

	sqlInsert = `
		INSERT INTO anchors (record_id, anchor, position, state, checked_at, checked_by, detail)
		VALUES (?, ?, ?, ?, ?, ?, ?)`

	sqlDelete = `DELETE FROM anchors WHERE record_id = ?`

	// sqlApply sets the anchors of a JSON list of changes at once.
	sqlApply = `
		UPDATE anchors SET state = c.state, checked_at = CAST(c.at AS BIGINT), checked_by = c.by, detail = c.detail
		FROM (SELECT value ->> 'r' AS record_id, value ->> 'a' AS anchor, value ->> 's' AS state,
				value ->> 't' AS at, value ->> 'b' AS by, value ->> 'd' AS detail
			FROM json_each(?)) AS c
		WHERE anchors.record_id = c.record_id AND anchors.anchor = c.anchor`

	// sqlEntities reads the entity anchors of live records. The entity
	// anchors drive the join: the unary + on r.status keeps the planner
	// off records_status_timeline_idx (migration 0072), which would read
	// every live record instead.
	sqlEntities = `
		SELECT a.record_id, r.namespace, a.anchor, a.position, a.state, a.checked_at, a.checked_by, a.detail
		FROM anchors AS a JOIN records AS r ON r.id = a.record_id
		WHERE a.anchor >= ? AND a.anchor < ? AND r.status || '' IN ('active', 'candidate')`

	// sqlFlaggedBy is, per record, its first unavailable anchor (by
	// position), how many, and when the latest of them became
	// unavailable, which orders the list. The few unavailable anchors
	// drive both queries: the unary + on r.status keeps the planner off
	// records_status_timeline_idx (migration 0072), which would read every
	// live record instead.
	sqlFlaggedBy = `
		SELECT record_id, MIN(position) AS first, COUNT(*) AS n, MAX(COALESCE(checked_at, 0)) AS latest
		FROM anchors WHERE state = 'unavailable' GROUP BY record_id`

	sqlFlaggedCount = `
		SELECT COUNT(*) FROM (` + sqlFlaggedBy + `) AS u
		JOIN records AS r ON r.id = u.record_id AND r.status || '' IN ('active', 'candidate')`

	sqlFlagged = `
		SELECT r.id, r.namespace, r.type, r.title, r.status, a.anchor, a.checked_at, u.n, a.detail, a.checked_by
		FROM (` + sqlFlaggedBy + `) AS u
		JOIN records AS r ON r.id = u.record_id AND r.status || '' IN ('active', 'candidate')
		JOIN anchors AS a ON a.record_id = u.record_id AND a.position = u.first
		ORDER BY u.latest DESC, r.id DESC
		LIMIT +?`
)

// entityPrefix bounds entity anchors for anchors_anchor_idx: every anchor
// that starts with "entity:" sorts at or after it and before entityEnd.
const (
	entityPrefix = "entity:"
	entityEnd    = "entity;"
)
