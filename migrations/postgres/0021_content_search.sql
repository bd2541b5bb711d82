-- Search by content (`GET /api/v1/instances?input.<path>=<value>`): the filter is JSON
-- containment (`input @> '{"customer":"acme"}'`), which this index answers without reading
-- every instance, so a rare customer's first page and counts stay fast at 100,000 instances.
-- `jsonb_path_ops` indexes only what `@>` needs (hashes of paths to values): smaller and faster
-- than the default operator class, which also serves key-existence operators we do not use.
-- An instance's input is written once, at its start, so the index costs one insert per start.
-- Node outputs get no such index: they are written at every node's end (the engine's hot
-- path), and `output.<node>.<path>` filters find a node's row by the primary key instead.
CREATE INDEX instances_input_content ON instances USING GIN (input jsonb_path_ops);
