-- How long the audit log is kept, in days (NULL: forever). Set on the default policy only:
-- the log is not per workflow. The retention sweeper deletes older rows in batches.
ALTER TABLE retention_policies ADD COLUMN audit_days INTEGER;
