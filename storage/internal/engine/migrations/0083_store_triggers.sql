-- 0083_store_triggers: two triggers every store fires, rewritten to write
-- the same rows without temporary tables. SQLite built one for each
-- INSERT ... SELECT into a table that has triggers of its own or that the
-- SELECT reads (bootstrap_rank, vector_changes), and an ephemeral index
-- for each IN list of more than two values (bootstrap_entries' durable
-- types): five b-trees made and dropped on every store. A single-row
-- VALUES needs none, nor does a CASE.

-- A new record, filed where bootstrap_entries (0005) files it, from the
-- new row itself: the CASE on new.type is the rank of a durable type and
-- NULL for the others.
DROP TRIGGER bootstrap_records_insert;
CREATE TRIGGER bootstrap_records_insert AFTER INSERT ON records
WHEN new.status = 'candidate' OR new.status = 'active' AND (
	CASE new.type WHEN 'constraint' THEN 0 WHEN 'requirement' THEN 1 WHEN 'preference' THEN 2
		WHEN 'decision' THEN 3 WHEN 'procedure' THEN 4 END IS NOT NULL
	OR EXISTS (SELECT 1 FROM anchors WHERE record_id = new.id AND state = 'unavailable'))
BEGIN
	INSERT INTO bootstrap_rank (record_id, namespace, section, type_rank, confidence, uses)
	VALUES (new.id, new.namespace,
		CASE WHEN new.status = 'candidate' THEN 1
			WHEN CASE new.type WHEN 'constraint' THEN 0 WHEN 'requirement' THEN 1 WHEN 'preference' THEN 2
				WHEN 'decision' THEN 3 WHEN 'procedure' THEN 4 END IS NOT NULL THEN 2
			ELSE 3 END,
		CASE WHEN new.status = 'active' THEN
			CASE new.type WHEN 'constraint' THEN 0 WHEN 'requirement' THEN 1 WHEN 'preference' THEN 2
				WHEN 'decision' THEN 3 WHEN 'procedure' THEN 4 ELSE 0 END
		ELSE 0 END,
		CASE WHEN new.status = 'active' AND CASE new.type WHEN 'constraint' THEN 0 WHEN 'requirement' THEN 1
				WHEN 'preference' THEN 2 WHEN 'decision' THEN 3 WHEN 'procedure' THEN 4 END IS NOT NULL
			THEN new.effective_confidence ELSE 0 END,
		CASE WHEN new.status = 'active' AND CASE new.type WHEN 'constraint' THEN 0 WHEN 'requirement' THEN 1
				WHEN 'preference' THEN 2 WHEN 'decision' THEN 3 WHEN 'procedure' THEN 4 END IS NOT NULL
			THEN COALESCE((SELECT returned + fetched FROM usage WHERE record_id = new.id), 0) ELSE 0 END);
END;

-- A new record moves to the feed's end (0020) as before: inserted when it
-- has no row, which is the rule, or its row moved when it has one (a purged
-- record's seq taken again). The second trigger is created last, so SQLite
-- fires it first and the first one's condition then still holds as the
-- record came; fired the other way round, a new record's version would
-- only move twice.
DROP TRIGGER vector_changes_record_insert;
CREATE TRIGGER vector_changes_record_insert AFTER INSERT ON records
WHEN NOT EXISTS (SELECT 1 FROM vector_changes WHERE record_seq = new.seq)
BEGIN
	INSERT INTO vector_changes (record_seq, version)
	VALUES (new.seq, (SELECT IFNULL(MAX(version), 0) + 1 FROM vector_changes));
END;

CREATE TRIGGER vector_changes_record_reinsert AFTER INSERT ON records
WHEN EXISTS (SELECT 1 FROM vector_changes WHERE record_seq = new.seq)
BEGIN
	UPDATE vector_changes SET version = (SELECT MAX(version) + 1 FROM vector_changes) WHERE record_seq = new.seq;
END;
