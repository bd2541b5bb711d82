-- A version counter per instance: every write of an instance's row, nodes or history sets it
-- one higher. A process that remembers an instance as it last wrote it (`store/snapshots.rs`)
-- writes its next transition in one statement, guarded by `rev` still being what it wrote,
-- instead of locking and re-reading the instance first.
ALTER TABLE instances ADD COLUMN rev BIGINT NOT NULL DEFAULT 0;

-- Aborts the statement that calls it unless `held`: a transition written from a remembered
-- snapshot checks with it that every instance's `rev` and every fence were as remembered, so
-- that nothing of the statement is kept when another writer got there first.
CREATE FUNCTION trellis_snapshot_held(held boolean) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT held THEN
        RAISE EXCEPTION 'a remembered snapshot is out of date' USING ERRCODE = 'TRSTL';
    END IF;
    RETURN true;
END
$$;
