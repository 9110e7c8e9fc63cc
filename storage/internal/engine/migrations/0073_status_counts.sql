-- 0073_status_counts: the two sums memory_status reports, kept by triggers
-- on record_counts (migration 0009) in the same transaction as the record
-- that changed: records by type and status, and records not deleted by
-- namespace. Summing record_counts at every call read a row per namespace,
-- type and status (350 rows for 50 namespaces, most of a millisecond);
-- these hold one row per answer. A sum that falls to 0 keeps its row;
-- memory_status leaves such rows out.

CREATE TABLE type_status_counts (
	type   TEXT    NOT NULL,
	status TEXT    NOT NULL,
	n      INTEGER NOT NULL,
	PRIMARY KEY (type, status)
) WITHOUT ROWID;

CREATE TABLE namespace_counts (
	namespace TEXT    NOT NULL PRIMARY KEY,
	n         INTEGER NOT NULL -- records not deleted
) WITHOUT ROWID;

INSERT INTO type_status_counts (type, status, n)
SELECT type, status, SUM(n) FROM record_counts GROUP BY type, status;

INSERT INTO namespace_counts (namespace, n)
SELECT namespace, SUM(n) FROM record_counts WHERE status <> 'deleted' GROUP BY namespace;

CREATE TRIGGER status_counts_insert AFTER INSERT ON record_counts BEGIN
	INSERT INTO type_status_counts (type, status, n) VALUES (new.type, new.status, new.n)
	ON CONFLICT (type, status) DO UPDATE SET n = n + excluded.n;
	INSERT INTO namespace_counts (namespace, n) SELECT new.namespace, new.n WHERE new.status <> 'deleted'
	ON CONFLICT (namespace) DO UPDATE SET n = n + excluded.n;
END;

CREATE TRIGGER status_counts_delete AFTER DELETE ON record_counts BEGIN
	UPDATE type_status_counts SET n = n - old.n WHERE type = old.type AND status = old.status;
	UPDATE namespace_counts SET n = n - old.n WHERE namespace = old.namespace AND old.status <> 'deleted';
END;

CREATE TRIGGER status_counts_update AFTER UPDATE ON record_counts BEGIN
	UPDATE type_status_counts SET n = n - old.n WHERE type = old.type AND status = old.status;
	UPDATE namespace_counts SET n = n - old.n WHERE namespace = old.namespace AND old.status <> 'deleted';
	INSERT INTO type_status_counts (type, status, n) VALUES (new.type, new.status, new.n)
	ON CONFLICT (type, status) DO UPDATE SET n = n + excluded.n;
	INSERT INTO namespace_counts (namespace, n) SELECT new.namespace, new.n WHERE new.status <> 'deleted'
	ON CONFLICT (namespace) DO UPDATE SET n = n + excluded.n;
END;
