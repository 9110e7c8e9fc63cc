-- 0090_session_digest: a recorded search keeps a keyed digest of its
-- session, never the session id a caller chose (issue 41: a token given as
-- session_id was kept verbatim). digest_keys holds this database's key,
-- made here at random; hearth_session_digest(key, session) is
-- storage.sessionDigest, registered on the writer's connection. The
-- sessions already recorded are digested in place, so that a later
-- memory_get in the same session still finds them (docs/questions.md).
CREATE TABLE digest_keys (
	name TEXT PRIMARY KEY,
	key  BLOB NOT NULL
) WITHOUT ROWID;

INSERT INTO digest_keys (name, key) VALUES ('session', randomblob(32));

UPDATE asked SET session = hearth_session_digest((SELECT key FROM digest_keys WHERE name = 'session'), session);
UPDATE question_sessions SET session = hearth_session_digest((SELECT key FROM digest_keys WHERE name = 'session'), session);
