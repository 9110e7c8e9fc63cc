package embeddings

// The statements of the embeddings and the vector change feed, in the
// forms both engines read (docs/postgres.md).

const (
	sqlPut = `
		INSERT INTO embeddings (record_id, digest, model, snapshot, vector, embedded_at)
		SELECT id, ?2, ?3, ?4, ?5, ?6 FROM records WHERE id = ?1 AND status IN ('active', 'candidate')
		ON CONFLICT (record_id) DO UPDATE SET digest = excluded.digest, model = excluded.model,
			snapshot = excluded.snapshot, vector = excluded.vector, embedded_at = excluded.embedded_at`

	sqlGet = `
		SELECT record_id, digest, model, snapshot, vector FROM embeddings
		WHERE record_id IN (SELECT value FROM json_each(?))`

	sqlVersion = `SELECT MAX(version) FROM vector_changes`

	// sqlChanges reads the feed above a version with each record as it
	// stands; sqlChangesWithVectors with its vector too.
	sqlChanges            = sqlChangesHead + `NULL` + sqlChangesTail
	sqlChangesWithVectors = sqlChangesHead + `e.vector` + sqlChangesTail

	sqlChangesHead = `
		SELECT c.record_seq, c.version, r.id IS NULL,
			coalesce(r.id, ''), coalesce(r.namespace, ''), coalesce(r.type, ''), coalesce(r.status, ''),
			coalesce(r.title, ''), coalesce(r.content, ''),
			coalesce(e.digest, ''), coalesce(e.model, ''), coalesce(e.snapshot, ''), `
	sqlChangesTail = `
		FROM vector_changes AS c
		LEFT JOIN records AS r ON r.seq = c.record_seq
		LEFT JOIN embeddings AS e ON e.record_id = r.id
		WHERE c.version > ?
		ORDER BY c.version`
)
