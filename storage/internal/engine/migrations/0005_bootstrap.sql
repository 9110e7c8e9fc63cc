-- 0005_bootstrap: what the session-start packet lists, kept in packet order
-- (docs/design.md R-B6), so that memory_bootstrap reads a few index entries and two
-- counters instead of sorting and counting every durable record of a scope
-- chain (at 100,000 records a COUNT over the durable rows alone takes ~6 ms).
--
-- Both tables are derived: the triggers below keep them in step with
-- records, anchors and usage in the same transaction as the row that changed,
-- whoever writes it (store, update, evidence, anchor reports, renames,
-- purges).

-- bootstrap_entries says, for every record, whether the packet lists it and
-- where: section 1, candidates awaiting review; section 2, active durable
-- records; section 3, the other active records with an unavailable anchor;
-- NULL, not listed. Within a namespace and section the packet orders by
-- (type_rank, confidence DESC, uses DESC, record_id DESC): durable records by
-- type (constraint, requirement, preference, then decision, procedure), then
-- effective confidence, then use (usage.returned + fetched); sections 1 and 3
-- carry zeros there, so they come newest first (record ids sort by creation).
-- It is the one definition the triggers and the backfill below share.
CREATE VIEW bootstrap_entries AS
SELECT
	r.id AS record_id,
	r.namespace AS namespace,
	CASE
		WHEN r.status = 'candidate' THEN 1
		WHEN r.status <> 'active' THEN NULL
		WHEN r.type IN ('constraint', 'requirement', 'preference', 'decision', 'procedure') THEN 2
		WHEN EXISTS (SELECT 1 FROM anchors AS a WHERE a.record_id = r.id AND a.state = 'unavailable') THEN 3
	END AS section,
	CASE WHEN r.status = 'active' THEN
		CASE r.type WHEN 'constraint' THEN 0 WHEN 'requirement' THEN 1 WHEN 'preference' THEN 2
			WHEN 'decision' THEN 3 WHEN 'procedure' THEN 4 ELSE 0 END
	ELSE 0 END AS type_rank,
	CASE WHEN r.status = 'active' AND r.type IN ('constraint', 'requirement', 'preference', 'decision', 'procedure')
		THEN r.effective_confidence ELSE 0 END AS confidence,
	CASE WHEN r.status = 'active' AND r.type IN ('constraint', 'requirement', 'preference', 'decision', 'procedure')
		THEN COALESCE(u.returned + u.fetched, 0) ELSE 0 END AS uses
FROM records AS r LEFT JOIN usage AS u ON u.record_id = r.id;

-- bootstrap_rank holds the listed records with their section and order key;
-- its index gives each namespace's items in packet order.
CREATE TABLE bootstrap_rank (
	record_id  TEXT    PRIMARY KEY REFERENCES records (id) ON DELETE CASCADE,
	namespace  TEXT    NOT NULL,
	section    INTEGER NOT NULL,
	type_rank  INTEGER NOT NULL,
	confidence REAL    NOT NULL,
	uses       INTEGER NOT NULL
) WITHOUT ROWID;

CREATE INDEX bootstrap_rank_order_idx
	ON bootstrap_rank (namespace, section, type_rank, confidence DESC, uses DESC, record_id DESC);

-- bootstrap_counts counts bootstrap_rank's rows per namespace and section:
-- left_out needs how many items qualify, not only the few that fit.
CREATE TABLE bootstrap_counts (
	namespace TEXT    NOT NULL,
	section   INTEGER NOT NULL,
	n         INTEGER NOT NULL,
	PRIMARY KEY (namespace, section)
) WITHOUT ROWID;

-- Existing rows first, then the triggers that keep them current.
INSERT INTO bootstrap_rank (record_id, namespace, section, type_rank, confidence, uses)
SELECT record_id, namespace, section, type_rank, confidence, uses
FROM bootstrap_entries WHERE section IS NOT NULL;

INSERT INTO bootstrap_counts (namespace, section, n)
SELECT namespace, section, COUNT(*) FROM bootstrap_rank GROUP BY namespace, section;

CREATE TRIGGER bootstrap_rank_count_insert AFTER INSERT ON bootstrap_rank BEGIN
	INSERT INTO bootstrap_counts (namespace, section, n) VALUES (new.namespace, new.section, 1)
	ON CONFLICT (namespace, section) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER bootstrap_rank_count_delete AFTER DELETE ON bootstrap_rank BEGIN
	UPDATE bootstrap_counts SET n = n - 1 WHERE namespace = old.namespace AND section = old.section;
	-- A namespace that no longer holds any record of the section leaves the
	-- table, so renames and purges do not leave zero rows behind forever.
	DELETE FROM bootstrap_counts WHERE namespace = old.namespace AND section = old.section AND n = 0;
END;

-- A record is (re)filed whenever something that places it changes: it
-- leaves bootstrap_rank and comes back where bootstrap_entries now puts it.

CREATE TRIGGER bootstrap_records_insert AFTER INSERT ON records
WHEN new.status IN ('candidate', 'active')
BEGIN
	INSERT INTO bootstrap_rank (record_id, namespace, section, type_rank, confidence, uses)
	SELECT record_id, namespace, section, type_rank, confidence, uses
	FROM bootstrap_entries WHERE record_id = new.id AND section IS NOT NULL;
END;

CREATE TRIGGER bootstrap_records_update AFTER UPDATE OF namespace, status, type, effective_confidence ON records
WHEN old.namespace IS NOT new.namespace OR old.status IS NOT new.status
	OR old.type IS NOT new.type OR old.effective_confidence IS NOT new.effective_confidence
BEGIN
	DELETE FROM bootstrap_rank WHERE record_id = old.id;
	INSERT INTO bootstrap_rank (record_id, namespace, section, type_rank, confidence, uses)
	SELECT record_id, namespace, section, type_rank, confidence, uses
	FROM bootstrap_entries WHERE record_id = new.id AND section IS NOT NULL;
END;

-- A purged record also leaves through the foreign key's cascade; this
-- trigger keeps that true whatever the foreign_keys pragma says.
CREATE TRIGGER bootstrap_records_delete AFTER DELETE ON records BEGIN
	DELETE FROM bootstrap_rank WHERE record_id = old.id;
END;

-- Only an anchor that is or was unavailable can move its record.
CREATE TRIGGER bootstrap_anchors_insert AFTER INSERT ON anchors
WHEN new.state = 'unavailable'
BEGIN
	DELETE FROM bootstrap_rank WHERE record_id = new.record_id;
	INSERT INTO bootstrap_rank (record_id, namespace, section, type_rank, confidence, uses)
	SELECT record_id, namespace, section, type_rank, confidence, uses
	FROM bootstrap_entries WHERE record_id = new.record_id AND section IS NOT NULL;
END;

CREATE TRIGGER bootstrap_anchors_update AFTER UPDATE OF state, record_id ON anchors
WHEN (old.state = 'unavailable' OR new.state = 'unavailable')
	AND (old.state IS NOT new.state OR old.record_id IS NOT new.record_id)
BEGIN
	DELETE FROM bootstrap_rank WHERE record_id IN (old.record_id, new.record_id);
	INSERT INTO bootstrap_rank (record_id, namespace, section, type_rank, confidence, uses)
	SELECT record_id, namespace, section, type_rank, confidence, uses
	FROM bootstrap_entries WHERE record_id IN (old.record_id, new.record_id) AND section IS NOT NULL;
END;

CREATE TRIGGER bootstrap_anchors_delete AFTER DELETE ON anchors
WHEN old.state = 'unavailable'
BEGIN
	DELETE FROM bootstrap_rank WHERE record_id = old.record_id;
	INSERT INTO bootstrap_rank (record_id, namespace, section, type_rank, confidence, uses)
	SELECT record_id, namespace, section, type_rank, confidence, uses
	FROM bootstrap_entries WHERE record_id = old.record_id AND section IS NOT NULL;
END;

-- Use moves only durable records (section 2); it is updated in place.
CREATE TRIGGER bootstrap_usage_insert AFTER INSERT ON usage BEGIN
	UPDATE bootstrap_rank SET uses = new.returned + new.fetched
	WHERE record_id = new.record_id AND section = 2;
END;

CREATE TRIGGER bootstrap_usage_update AFTER UPDATE OF returned, fetched ON usage BEGIN
	UPDATE bootstrap_rank SET uses = new.returned + new.fetched
	WHERE record_id = new.record_id AND section = 2;
END;

CREATE TRIGGER bootstrap_usage_delete AFTER DELETE ON usage BEGIN
	UPDATE bootstrap_rank SET uses = 0 WHERE record_id = old.record_id AND section = 2;
END;
