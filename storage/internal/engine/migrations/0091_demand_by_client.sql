-- 0091_demand_by_client: demand weighs a question's sessions by client
-- (issue 41: one client inventing session ids made its question the top
-- of demand). Each client's distinct sessions count 1, 1/2, 1/4, … (from
-- the 13th on, nothing), so one client adds less than 2 however many
-- sessions it names, and two clients asking once outrank it; within one
-- client more sessions still rank higher (docs/questions.md, Demand).
--
-- The column sessions becomes weight, the sum of those counts, which the
-- demand column (and its index) now multiply; a new sessions column keeps
-- the distinct sessions that asked, as memory_questions reports them.
ALTER TABLE questions RENAME COLUMN sessions TO weight;
ALTER TABLE questions ADD COLUMN sessions INTEGER NOT NULL DEFAULT 0;

DROP TRIGGER question_sessions_insert;
DROP TRIGGER question_sessions_delete;

-- The client's n-th session (n counted after the insert) adds 2^-(n-1).
CREATE TRIGGER question_sessions_insert AFTER INSERT ON question_sessions BEGIN
	UPDATE questions SET sessions = sessions + 1,
		weight = weight + (SELECT CASE WHEN count(*) <= 12 THEN 1.0 / (1 << (count(*) - 1)) ELSE 0.0 END
			FROM question_sessions WHERE question = new.question AND client = new.client)
	WHERE seq = new.question;
END;

-- With m of the client's sessions left, the one that went added 2^-m.
CREATE TRIGGER question_sessions_delete AFTER DELETE ON question_sessions BEGIN
	UPDATE questions SET sessions = sessions - 1,
		weight = weight - (SELECT CASE WHEN count(*) < 12 THEN 1.0 / (1 << count(*)) ELSE 0.0 END
			FROM question_sessions WHERE question = old.question AND client = old.client)
	WHERE seq = old.question;
END;

UPDATE questions SET
	sessions = (SELECT count(*) FROM question_sessions AS s WHERE s.question = questions.seq),
	weight = COALESCE((SELECT sum(2.0 - 1.0 / (1 << (min(n, 12) - 1)))
		FROM (SELECT count(*) AS n FROM question_sessions AS s WHERE s.question = questions.seq GROUP BY s.client)), 0.0);
