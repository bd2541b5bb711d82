-- Saved views (`http/resources/views.rs`): a named instances-list filter (the SPA path with its
-- query), private to its owner or shared with everyone. The owner is a user's or an API key's id
-- as text (either may sign in), hence no foreign key; its name is kept for the navigation.
-- Names are unique per owner.
CREATE TABLE saved_views (
    id         UUID PRIMARY KEY,
    owner_id   TEXT NOT NULL,
    owner_name TEXT NOT NULL,
    name       TEXT NOT NULL,
    path       TEXT NOT NULL,
    shared     BOOLEAN NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    CONSTRAINT saved_views_owner_name_key UNIQUE (owner_id, name)
);
CREATE INDEX saved_views_shared ON saved_views (name) WHERE shared;
