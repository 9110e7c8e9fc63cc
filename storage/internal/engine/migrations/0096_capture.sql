-- 0096_capture: what the hooks capture without a model (docs/capture.md).
-- capture_events keeps each event id once, so a replayed event changes
-- nothing; capture_facts is the state of each coalesced fact of a session
-- (one file edited, one command run) with the observation record that
-- shows it. Both are purged after capture_retention_days.

CREATE TABLE capture_events (
	id         TEXT    PRIMARY KEY,
	namespace  TEXT    NOT NULL,
	session_id TEXT    NOT NULL,
	at         INTEGER NOT NULL
) WITHOUT ROWID;

CREATE INDEX capture_events_at_idx ON capture_events (at);

CREATE TABLE capture_facts (
	namespace  TEXT    NOT NULL,
	session_id TEXT    NOT NULL,
	key        TEXT    NOT NULL,
	harness    TEXT    NOT NULL,
	kind       TEXT    NOT NULL,
	state      TEXT    NOT NULL,
	record_id  TEXT    NOT NULL DEFAULT '',
	first_at   INTEGER NOT NULL,
	last_at    INTEGER NOT NULL,
	PRIMARY KEY (namespace, session_id, key)
) WITHOUT ROWID;

-- The last session of a namespace ("where we left off") and the purge.
CREATE INDEX capture_facts_last_idx ON capture_facts (namespace, last_at);
CREATE INDEX capture_facts_at_idx ON capture_facts (last_at);
