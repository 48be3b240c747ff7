-- Mirrors: other directories that speak this API, whose records this directory harvests from their
-- change feeds and publishes as its own, read-only, with their origin. Kept on the primary only.

CREATE TABLE mirrors (
    name          TEXT PRIMARY KEY,    -- the operator's name for the mirror
    upstream      TEXT NOT NULL,       -- base URL of the upstream service (https://b.example)
    upstream_dir  TEXT NOT NULL,       -- the upstream directory's slug
    client_id     TEXT NOT NULL,       -- client credentials the upstream gave this directory
    client_secret TEXT NOT NULL,       -- never printed nor logged
    audiences     INTEGER NOT NULL,    -- audiences mirrored records are published to; 0: by the upstream tier
    created_at    TEXT NOT NULL,
    -- Harvest state, written in the same transaction as the records a page of the feed brought.
    cursor        TEXT NOT NULL DEFAULT '',   -- the feed cursor to read after; '' reads from the oldest event
    tier          TEXT NOT NULL DEFAULT '',   -- the tier the upstream gave the client at the last page
    generation    INTEGER NOT NULL DEFAULT 1, -- the full harvest under way or last completed
    full_harvest  INTEGER NOT NULL DEFAULT 1, -- 1 while a full harvest runs (from the oldest event)
    harvested     INTEGER NOT NULL DEFAULT 0, -- records and tombstones written, in all
    last_success  TEXT NOT NULL DEFAULT '',
    last_error    TEXT NOT NULL DEFAULT ''
) STRICT;

-- The records each mirror owns at this directory, and the full harvest that last saw each one: what a
-- completed full harvest did not see is checked at the upstream and removed when it is gone there.
CREATE TABLE mirrored_records (
    public_id  TEXT PRIMARY KEY,
    mirror     TEXT NOT NULL,
    generation INTEGER NOT NULL
) STRICT;

CREATE INDEX mirrored_records_by_mirror ON mirrored_records (mirror, generation);
