-- 0030_anchor_state: what an anchor check found, and the entity sweeps
-- (docs/design.md R-H1..R-H3). Times are INTEGER unix milliseconds (UTC).

-- detail says briefly why an anchor is in its state ("state unavailable",
-- "not in Home Assistant", a client's note); it passed the screen. An
-- anchor's checked_at, checked_by and detail are those of the check that
-- gave it its state: a check that finds the same state changes nothing, so
-- checked_at is when the state began.
ALTER TABLE anchors ADD COLUMN detail TEXT NOT NULL DEFAULT '';

-- The sweep reads entity anchors by prefix (anchor >= 'entity:' AND
-- anchor < 'entity;'), which this index serves.
CREATE INDEX anchors_anchor_idx ON anchors (anchor);

-- anchor_sweeps keeps the latest entity sweeps, newest last: who asked (a
-- client, or hearth for the schedule), whether Home Assistant was there
-- (a SUPERVISOR_TOKEN) and answered, and the counts. An unreachable sweep
-- changes no anchor but is kept, so that memory_status can say so.
CREATE TABLE anchor_sweeps (
	seq            INTEGER PRIMARY KEY,
	at             INTEGER NOT NULL,
	requested_by   TEXT    NOT NULL,
	home_assistant INTEGER NOT NULL,
	unreachable    INTEGER NOT NULL,
	detail         TEXT    NOT NULL DEFAULT '',
	checked        INTEGER NOT NULL,
	changed        INTEGER NOT NULL,
	available      INTEGER NOT NULL,
	unavailable    INTEGER NOT NULL,
	unknown        INTEGER NOT NULL
);
