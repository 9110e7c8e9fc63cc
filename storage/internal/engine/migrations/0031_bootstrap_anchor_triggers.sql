-- 0031_bootstrap_anchor_triggers: an anchor's state can move only an active
-- record that is not durable (a note or summary) in the session-start
-- packet: into its third section while one of its anchors is unavailable,
-- out of the packet when none is. A candidate stays in the first section
-- and an active durable record in the second whatever its anchors say;
-- their flag is read when the packet is made. The triggers of 0005 refiled,
-- through bootstrap_entries, every record whose anchor became or stopped
-- being unavailable, and a sweep that changes thousands of entity anchors
-- paid for each. These touch only the records whose place can change, and
-- write their third-section row directly (its order key is all zeros, as
-- bootstrap_entries gives it).

DROP TRIGGER bootstrap_anchors_insert;
DROP TRIGGER bootstrap_anchors_update;
DROP TRIGGER bootstrap_anchors_delete;

-- The records an anchor row can move, and their third-section row.
CREATE VIEW bootstrap_notes AS
SELECT id AS record_id, namespace, 3 AS section, 0 AS type_rank, 0 AS confidence, 0 AS uses
FROM records
WHERE status = 'active' AND type NOT IN ('constraint', 'requirement', 'preference', 'decision', 'procedure');

CREATE TRIGGER bootstrap_anchors_insert AFTER INSERT ON anchors
WHEN new.state = 'unavailable'
BEGIN
	INSERT OR IGNORE INTO bootstrap_rank (record_id, namespace, section, type_rank, confidence, uses)
	SELECT record_id, namespace, section, type_rank, confidence, uses FROM bootstrap_notes WHERE record_id = new.record_id;
END;

CREATE TRIGGER bootstrap_anchors_update AFTER UPDATE OF state, record_id ON anchors
WHEN (old.state = 'unavailable' OR new.state = 'unavailable')
	AND (old.state IS NOT new.state OR old.record_id IS NOT new.record_id)
BEGIN
	DELETE FROM bootstrap_rank
	WHERE record_id = old.record_id AND section = 3
		AND NOT EXISTS (SELECT 1 FROM anchors WHERE record_id = old.record_id AND state = 'unavailable');
	INSERT OR IGNORE INTO bootstrap_rank (record_id, namespace, section, type_rank, confidence, uses)
	SELECT record_id, namespace, section, type_rank, confidence, uses FROM bootstrap_notes
	WHERE record_id = new.record_id AND new.state = 'unavailable';
END;

CREATE TRIGGER bootstrap_anchors_delete AFTER DELETE ON anchors
WHEN old.state = 'unavailable'
BEGIN
	DELETE FROM bootstrap_rank
	WHERE record_id = old.record_id AND section = 3
		AND NOT EXISTS (SELECT 1 FROM anchors WHERE record_id = old.record_id AND state = 'unavailable');
END;
