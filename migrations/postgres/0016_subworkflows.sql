-- Sub-workflows: a child instance records the parent instance and the node (and its attempt)
-- that started it, and how deep it sits (a top-level instance is 0). No foreign key: a purged
-- parent leaves the link dangling, and the API then shows the id alone.
ALTER TABLE instances ADD COLUMN parent_instance_id UUID;
ALTER TABLE instances ADD COLUMN parent_node_id TEXT;
ALTER TABLE instances ADD COLUMN parent_attempt INTEGER;
ALTER TABLE instances ADD COLUMN depth INTEGER NOT NULL DEFAULT 0;
CREATE INDEX instances_by_parent ON instances (parent_instance_id) WHERE parent_instance_id IS NOT NULL;
