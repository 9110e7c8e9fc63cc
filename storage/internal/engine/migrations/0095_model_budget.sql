-- 0095_model_budget: the daily budget of each model server (issue #39),
-- kept so that a restart does not give a server a new day's budget. Days
-- are local dates, YYYY-MM-DD; a day's rows are dropped once it is a week
-- old (ModelUsage writes are one per model call, the table stays small).
CREATE TABLE model_usage (
	day               TEXT    NOT NULL,
	server            TEXT    NOT NULL,
	calls             INTEGER NOT NULL DEFAULT 0,
	prompt_tokens     INTEGER NOT NULL DEFAULT 0,
	completion_tokens INTEGER NOT NULL DEFAULT 0,
	estimated         INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (day, server)
) WITHOUT ROWID;

-- One row while an admin has paused model calls (memory_model_pause).
CREATE TABLE model_pause (
	id        INTEGER PRIMARY KEY CHECK (id = 1),
	paused_at INTEGER NOT NULL
);
