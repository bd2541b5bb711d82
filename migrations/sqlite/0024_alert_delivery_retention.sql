-- The retention sweep deletes finished alert deliveries (their attempts by cascade) older than
-- the default policy's `audit_days`, or 30 days (`jobs/retention.rs`), oldest first: this
-- index walks them by age without reading the pending ones the senders claim.
CREATE INDEX alert_deliveries_finished ON alert_deliveries (created_at) WHERE status <> 'pending';
