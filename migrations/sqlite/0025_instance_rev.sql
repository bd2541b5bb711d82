-- A version counter per instance: every write of an instance's row, nodes or history sets it
-- one higher. A transition written from a remembered snapshot (`store/snapshots.rs`) checks
-- that `rev` is still what it wrote instead of re-reading the instance first.
ALTER TABLE instances ADD COLUMN rev INTEGER NOT NULL DEFAULT 0;
