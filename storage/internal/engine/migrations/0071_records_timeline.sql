-- 0071_records_timeline: the timeline's order (created_at, then id, both
-- descending) as an index that also holds the columns it filters on, so a
-- page walks the index backwards from the newest record, or from the
-- previous page's last one (after_id), judges each row by the index alone
-- and stops when the page is full, instead of sorting every record in
-- reach.

CREATE INDEX records_timeline_idx ON records (created_at, id, namespace, status, type);
