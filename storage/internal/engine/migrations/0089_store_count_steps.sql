-- 0089_store_count_steps: two things every store paid for and did not need,
-- found by counting the instructions of 5,000 stores (make bench-instructions).

-- A record's count moving by one (a store, a forget, a status change) is an
-- update of n alone in its record_counts row. The sums (0073) then took
-- four statements: old.n subtracted from the row's sums, new.n added back to
-- the same rows. The row's key is the same, so the difference is added in
-- two. An update that moves a row to another namespace, type or status still
-- takes the four. The sums' rows exist for every record_counts row: its
-- insert made them (0073 made them for the rows already there), and nothing
-- deletes them.
DROP TRIGGER status_counts_update;
CREATE TRIGGER status_counts_update AFTER UPDATE ON record_counts
WHEN old.namespace IS NOT new.namespace OR old.type IS NOT new.type OR old.status IS NOT new.status
BEGIN
	UPDATE type_status_counts SET n = n - old.n WHERE type = old.type AND status = old.status;
	UPDATE namespace_counts SET n = n - old.n WHERE namespace = old.namespace AND old.status <> 'deleted';
	INSERT INTO type_status_counts (type, status, n) VALUES (new.type, new.status, new.n)
	ON CONFLICT (type, status) DO UPDATE SET n = n + excluded.n;
	INSERT INTO namespace_counts (namespace, n) SELECT new.namespace, new.n WHERE new.status <> 'deleted'
	ON CONFLICT (namespace) DO UPDATE SET n = n + excluded.n;
END;
CREATE TRIGGER status_counts_change AFTER UPDATE OF n ON record_counts
WHEN old.namespace IS new.namespace AND old.type IS new.type AND old.status IS new.status
BEGIN
	UPDATE type_status_counts SET n = n + new.n - old.n WHERE type = new.type AND status = new.status;
	UPDATE namespace_counts SET n = n + new.n - old.n WHERE namespace = new.namespace AND new.status <> 'deleted';
END;

-- audit_at_idx (0001) served no statement: the audit's reads go by record
-- (audit_record_id_idx), by action and time (audit_action_at_idx, 0050) or
-- by seq. Every audited write paid a b-tree insert in it.
DROP INDEX audit_at_idx;
