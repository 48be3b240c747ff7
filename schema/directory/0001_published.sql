-- A directory's published data. This file is replicated to edges, so it holds only what some served
-- audience may see: projections per audience, never the canonical records (those live in ops.db).

-- The directory's public description (slug, country, time zone, licence, attribution, settings).
CREATE TABLE directory (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    doc        BLOB NOT NULL,
    updated_at TEXT NOT NULL
) STRICT;

-- One row per record: what reads need to answer 200, 301, 404 or 410, and the keys lists filter on.
-- A public ID starts with its kind's prefix, so the primary key already groups records by kind.
CREATE TABLE records (
    public_id       TEXT PRIMARY KEY,
    kind            TEXT NOT NULL CHECK (kind IN ('organisation', 'location', 'service', 'practitioner', 'role')),
    state           TEXT NOT NULL CHECK (state IN ('live', 'closed', 'removed', 'merged', 'visibility_reduced', 'takedown')),
    -- Audiences that may see the record now (bit set: 1 public, 2 professional, 4 partner, 8 staff).
    visible_to      INTEGER NOT NULL,
    -- Audiences that saw the record while it was last visible: they get 410 or 301, others 404.
    seen_by         INTEGER NOT NULL,
    survivor_id     TEXT,
    version         INTEGER NOT NULL,
    local_revision  INTEGER NOT NULL,
    -- Hash of every projection with versions left out: a change of it is a new version.
    view_hash       BLOB NOT NULL,
    organisation_id TEXT,
    location_id     TEXT,
    service_id      TEXT,
    practitioner_id TEXT,
    updated_at      TEXT NOT NULL
) STRICT;
CREATE INDEX records_organisation ON records (organisation_id) WHERE organisation_id IS NOT NULL;
CREATE INDEX records_location ON records (location_id) WHERE location_id IS NOT NULL;
CREATE INDEX records_service ON records (service_id) WHERE service_id IS NOT NULL;
CREATE INDEX records_practitioner ON records (practitioner_id) WHERE practitioner_id IS NOT NULL;

-- The canonical (brief) views of each record: one row per distinct body, with the set of audiences
-- that receive it (bit set as in records.visible_to; bit 128 is the organisation's leadership view).
-- Most records look the same to every audience, so most have one row. An audience in no row's set is
-- an audience the record is hidden from.
CREATE TABLE projections (
    public_id TEXT NOT NULL,
    audiences INTEGER NOT NULL,
    body      BLOB NOT NULL,
    etag      TEXT NOT NULL,
    PRIMARY KEY (public_id, audiences)
) STRICT, WITHOUT ROWID;

-- Areas each service is at (its location's) or serves (its catchment), as type:code, for the area
-- filter of the service list.
CREATE TABLE record_areas (
    area      TEXT NOT NULL,
    public_id TEXT NOT NULL
) STRICT;
CREATE UNIQUE INDEX record_areas_area ON record_areas (area, public_id);
CREATE INDEX record_areas_record ON record_areas (public_id);

-- The change log. seq is never reused (AUTOINCREMENT), so pruning below a floor is safe, and with one
-- writer commit order is sequence order. Consumers deduplicate by the unique tuple.
CREATE TABLE changes (
    seq            INTEGER PRIMARY KEY AUTOINCREMENT,
    kind           TEXT NOT NULL,
    public_id      TEXT NOT NULL,
    version        INTEGER NOT NULL,
    local_revision INTEGER NOT NULL,
    event_type     TEXT NOT NULL CHECK (event_type IN ('created', 'updated', 'closed', 'deleted', 'merged', 'visibility_reduced')),
    survivor_id    TEXT,
    origin         TEXT,
    -- Audiences the event is for: those who may see the record after it, or saw it before.
    audiences      INTEGER NOT NULL,
    at             TEXT NOT NULL
) STRICT;
CREATE UNIQUE INDEX changes_dedupe ON changes (public_id, version, local_revision, event_type);

-- The oldest sequence a cursor may name; older cursors answer 410.
CREATE TABLE change_floor (
    id  INTEGER PRIMARY KEY CHECK (id = 1),
    seq INTEGER NOT NULL
) STRICT;
INSERT INTO change_floor (id, seq) VALUES (1, 0);
