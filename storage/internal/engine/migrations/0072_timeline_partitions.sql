-- 0072_timeline_partitions: the timeline's order (created_at, then id) kept
-- within each status, and within each namespace and status, by two indexes
-- that also hold the columns a timeline filters on. A timeline merges one
-- walk per status (or per namespace and status) of the records asked for,
-- each already in order, and stops when the page is full: a filter that
-- matches few records no longer walks past all the others, as it did along
-- records_timeline_idx (migration 0071), which this replaces. The same
-- status index serves the oldest-first reads of one status (candidates to
-- review or expire, records unused).

CREATE INDEX records_status_timeline_idx ON records (status, created_at, id, namespace, type);
CREATE INDEX records_namespace_status_timeline_idx ON records (namespace, status, created_at, id, type);
DROP INDEX records_timeline_idx;
