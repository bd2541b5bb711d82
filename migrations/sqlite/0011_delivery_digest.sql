-- The SHA-256 (hex) of a webhook delivery's signed body, for presets whose signature does not
-- cover the delivery id (GitHub): a captured delivery replayed under a new id within the
-- dedupe window is then recognised by its body. NULL for cron ticks and Standard Webhooks.
ALTER TABLE trigger_deliveries ADD COLUMN body_digest TEXT;
CREATE INDEX trigger_deliveries_by_digest ON trigger_deliveries (trigger_id, body_digest);
