-- 0040_questions: what sessions asked, the questions it groups into, and
-- the standing answer of each (docs/design.md R-W1..R-W7). Times are INTEGER unix
-- milliseconds (UTC).

-- questions groups recorded searches (and declared questions) by key, the
-- query's normalised form (storage.QuestionKey), within a namespace. The
-- counters are derived from asked by the triggers below, in the same
-- transaction as the asked row that moves them, whoever writes it (a
-- recorded search, a memory_get that uses a hit, a retention purge).
-- (namespace, key) is looked up, not enforced unique: a namespace rename
-- must never fail on two questions meeting under the new name.
CREATE TABLE questions (
	seq           INTEGER PRIMARY KEY,
	id            TEXT    NOT NULL UNIQUE,
	namespace     TEXT    NOT NULL,
	key           TEXT    NOT NULL,
	text          TEXT    NOT NULL,
	declared      INTEGER NOT NULL DEFAULT 0,
	asks          INTEGER NOT NULL DEFAULT 0,
	used          INTEGER NOT NULL DEFAULT 0,
	sessions      INTEGER NOT NULL DEFAULT 0,
	clients       INTEGER NOT NULL DEFAULT 0,
	created_at    INTEGER NOT NULL,
	last_asked_at INTEGER,
	-- demand (SPEC R-W2): distinct sessions asking × (1 − share of asks
	-- whose hits were used). Asked often and answered badly scores high; a
	-- question whose hits were always used scores 0.
	demand        REAL    GENERATED ALWAYS AS (
		CASE WHEN asks > 0 THEN sessions * (1.0 - CAST(used AS REAL) / asks) ELSE 0.0 END) VIRTUAL
);

CREATE INDEX questions_namespace_key_idx ON questions (namespace, key);
CREATE INDEX questions_demand_idx ON questions (demand DESC, id);

-- asked is one recorded search: who asked (client, session), what (query,
-- as screened) and the full-text hit ids (a JSON array, best first). used
-- is set once a memory_get in the same session fetched one of those hits.
CREATE TABLE asked (
	seq      INTEGER PRIMARY KEY,
	question INTEGER NOT NULL REFERENCES questions (seq) ON DELETE CASCADE,
	at       INTEGER NOT NULL,
	client   TEXT    NOT NULL,
	session  TEXT    NOT NULL,
	query    TEXT    NOT NULL,
	hits     TEXT    NOT NULL DEFAULT '[]',
	used     INTEGER NOT NULL DEFAULT 0
);

CREATE INDEX asked_question_client_session_idx ON asked (question, client, session);
CREATE INDEX asked_client_session_idx ON asked (client, session) WHERE used = 0;
CREATE INDEX asked_at_idx ON asked (at);

-- The distinct sessions and clients that asked each question; their
-- triggers keep questions.sessions and questions.clients.
CREATE TABLE question_sessions (
	question INTEGER NOT NULL REFERENCES questions (seq) ON DELETE CASCADE,
	client   TEXT    NOT NULL,
	session  TEXT    NOT NULL,
	PRIMARY KEY (question, client, session)
) WITHOUT ROWID;

CREATE TABLE question_clients (
	question INTEGER NOT NULL REFERENCES questions (seq) ON DELETE CASCADE,
	client   TEXT    NOT NULL,
	PRIMARY KEY (question, client)
) WITHOUT ROWID;

CREATE TRIGGER question_sessions_insert AFTER INSERT ON question_sessions BEGIN
	UPDATE questions SET sessions = sessions + 1 WHERE seq = new.question;
END;

CREATE TRIGGER question_sessions_delete AFTER DELETE ON question_sessions BEGIN
	UPDATE questions SET sessions = sessions - 1 WHERE seq = old.question;
END;

CREATE TRIGGER question_clients_insert AFTER INSERT ON question_clients BEGIN
	UPDATE questions SET clients = clients + 1 WHERE seq = new.question;
END;

CREATE TRIGGER question_clients_delete AFTER DELETE ON question_clients BEGIN
	UPDATE questions SET clients = clients - 1 WHERE seq = old.question;
END;

CREATE TRIGGER asked_insert AFTER INSERT ON asked BEGIN
	INSERT INTO question_sessions (question, client, session) VALUES (new.question, new.client, new.session)
	ON CONFLICT DO NOTHING;
	INSERT INTO question_clients (question, client) VALUES (new.question, new.client)
	ON CONFLICT DO NOTHING;
	UPDATE questions SET asks = asks + 1, used = used + new.used,
		last_asked_at = max(COALESCE(last_asked_at, 0), new.at)
	WHERE seq = new.question;
END;

CREATE TRIGGER asked_used AFTER UPDATE OF used ON asked
WHEN old.used IS NOT new.used
BEGIN
	UPDATE questions SET used = used + new.used - old.used WHERE seq = new.question;
END;

CREATE TRIGGER asked_delete AFTER DELETE ON asked BEGIN
	UPDATE questions SET asks = asks - 1, used = used - old.used WHERE seq = old.question;
	DELETE FROM question_sessions
	WHERE question = old.question AND client = old.client AND session = old.session
		AND NOT EXISTS (SELECT 1 FROM asked AS a
			WHERE a.question = old.question AND a.client = old.client AND a.session = old.session);
	DELETE FROM question_clients
	WHERE question = old.question AND client = old.client
		AND NOT EXISTS (SELECT 1 FROM asked AS a WHERE a.question = old.question AND a.client = old.client);
END;

-- answers holds each question's standing answer: its sentences (a JSON
-- array of {text, source_ids}), the text they make, the cited record ids,
-- and basis, the digest of each cited record's id, updated_at and text
-- when the answer was made (storage.Basis). kind is model, extractive or
-- none (no record in scope answered). current is a hint for the worker's
-- choice of what to refresh: the triggers below clear it when a cited
-- record changes or goes; memory_answer compares the basis itself.
CREATE TABLE answers (
	question     INTEGER PRIMARY KEY REFERENCES questions (seq) ON DELETE CASCADE,
	text         TEXT    NOT NULL,
	sentences    TEXT    NOT NULL DEFAULT '[]',
	source_ids   TEXT    NOT NULL DEFAULT '[]',
	basis        TEXT    NOT NULL,
	kind         TEXT    NOT NULL CHECK (kind IN ('model', 'extractive', 'none')),
	model        TEXT    NOT NULL DEFAULT '',
	job_id       TEXT    NOT NULL DEFAULT '',
	generated_at INTEGER NOT NULL,
	current      INTEGER NOT NULL DEFAULT 1
);

-- answer_sources lists the records each answer cites, for the triggers.
CREATE TABLE answer_sources (
	record_id TEXT    NOT NULL,
	question  INTEGER NOT NULL REFERENCES answers (question) ON DELETE CASCADE,
	PRIMARY KEY (record_id, question)
) WITHOUT ROWID;

CREATE INDEX answer_sources_question_idx ON answer_sources (question);

CREATE TRIGGER answers_source_update AFTER UPDATE OF title, content, updated_at ON records
WHEN old.title IS NOT new.title OR old.content IS NOT new.content OR old.updated_at IS NOT new.updated_at
BEGIN
	UPDATE answers SET current = 0
	WHERE current = 1 AND question IN (SELECT question FROM answer_sources WHERE record_id = new.id);
END;

CREATE TRIGGER answers_source_delete AFTER DELETE ON records BEGIN
	UPDATE answers SET current = 0
	WHERE current = 1 AND question IN (SELECT question FROM answer_sources WHERE record_id = old.id);
END;
