-- A directory's operational data, kept on the primary only and never replicated to edges. It holds the
-- canonical records with every detail, staff-only ones included, from which directory.db is projected.

CREATE TABLE source_directory (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    directory  BLOB NOT NULL, -- the Directory as imported
    taxonomy   BLOB NOT NULL, -- the Taxonomy as imported
    own_hash   BLOB NOT NULL,
    updated_at TEXT NOT NULL
) STRICT;

CREATE TABLE source_collections (
    slug TEXT PRIMARY KEY,
    doc  BLOB NOT NULL
) STRICT;

CREATE TABLE source_records (
    public_id TEXT PRIMARY KEY,
    kind      TEXT NOT NULL,
    -- Hash of the directory's own information on the record: a change of it is a new local revision.
    own_hash  BLOB NOT NULL,
    doc       BLOB NOT NULL
) STRICT;
