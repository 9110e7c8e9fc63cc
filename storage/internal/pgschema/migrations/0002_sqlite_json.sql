-- 0002_sqlite_json: the two JSON forms of SQLite's that the record domain's
-- SQL uses, so that its statements stay one dialect (docs/postgres.md, The
-- dialect).
--
-- json_each(text): SQLite's table-valued json_each over a JSON array held
-- in text, with the two columns the domain reads: key, the element's index
-- from 0, and value, the element as text (a string's text, a number's
-- digits, an object's JSON; NULL for null). NULL gives no rows, as on
-- SQLite. PostgreSQL's own json_each takes json and walks an object: a
-- call with a text argument, or with a parameter or literal of no declared
-- type, resolves to this one (a string-category argument is preferred),
-- one with a json argument to PostgreSQL's (TestJSONEach_Resolution). A
-- value compared with a number is cast: CAST(value AS BIGINT), which
-- SQLite reads too.
CREATE FUNCTION json_each(j text) RETURNS TABLE (key bigint, value text)
	LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
	AS $$ SELECT e.o - 1, e.v FROM jsonb_array_elements_text(j::jsonb) WITH ORDINALITY AS e(v, o) $$;

-- text ->> text: a field of a JSON object held in text, as text (SQLite's
-- ->> on a JSON text; PostgreSQL's takes json or jsonb). NULL when the
-- field is missing or null. A number comes back as its digits: compared
-- with a number it is cast, as json_each's value is.
CREATE FUNCTION hearth_json_field(j text, k text) RETURNS text
	LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
	AS $$ SELECT j::jsonb ->> k $$;
CREATE OPERATOR ->> (LEFTARG = text, RIGHTARG = text, FUNCTION = hearth_json_field);
