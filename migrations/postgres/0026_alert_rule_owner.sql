-- Alert rules are owned like saved views: their creator and admins manage them, and others
-- see where a rule sends only as its host (a receiver URL is a credential: Slack's are).
-- Rules made before this have no owner id; their creator is matched by name instead.
ALTER TABLE alert_rules ADD COLUMN owner_id TEXT;
