-- 0097_audit_retention: the audit gets a retention (audit_retention_days,
-- issue #41). Its rows stay append-only: none is ever updated, and one is
-- deleted only when it lies at or before the cutoff of a prune recorded in
-- audit_prunes, which the prune writes first (pruneAuditTx). A prune also
-- writes its own audit row, saying how many rows went and up to when.
CREATE TABLE audit_prunes (
	seq    INTEGER PRIMARY KEY,
	at     INTEGER NOT NULL,
	cutoff INTEGER NOT NULL
);

CREATE TRIGGER audit_prunes_no_update BEFORE UPDATE ON audit_prunes BEGIN
	SELECT RAISE(ABORT, 'audit_prunes is append-only');
END;

CREATE TRIGGER audit_prunes_no_delete BEFORE DELETE ON audit_prunes BEGIN
	SELECT RAISE(ABORT, 'audit_prunes is append-only');
END;

DROP TRIGGER audit_no_delete;
CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit
WHEN old.at > coalesce((SELECT max(cutoff) FROM audit_prunes), -1)
BEGIN
	SELECT RAISE(ABORT, 'audit is append-only');
END;
