-- What the change feed needs to serve a client narrowed to areas or categories: where each record
-- lay, for each audience, before and after each event. Kept by the write path (dirdb/feedwrite.go).
--
-- A placement is the set of narrowing facts of a record, one a line, sorted, each with the audiences
-- (bit set as in records.visible_to) that see the record and the fact:
--   a:<area>             located in the area or serving it (a service's site, catchment; a site's
--                        areas; an organisation's or practitioner's services and sites)
--   c:<category>         a service of the category (a site's, organisation's or practitioner's)
--   ac:<area>|<category> one service both (organisations and practitioners)
-- A role lies where its service does. Most records share their placement with others, so each
-- distinct one is stored once; id 0 is the empty placement (a record nobody sees).
CREATE TABLE places (
    id     INTEGER PRIMARY KEY,
    placed TEXT NOT NULL UNIQUE
) STRICT;
INSERT INTO places (id, placed) VALUES (0, '');

-- The placement the change log last gave each record.
CREATE TABLE feed_places (
    public_id TEXT PRIMARY KEY,
    place_id  INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

-- Each event's placements before and after it (NULL for events logged before this migration). A
-- placement row (placement = 1) is logged for an audience whose placement changed in a write that
-- logged no event of the record for it (an organisation whose services moved): it reaches only
-- narrowed clients, as the record coming into or leaving their sight, so it takes no part in the
-- dedupe tuple of the log's own events.
ALTER TABLE changes ADD COLUMN placed_before INTEGER;
ALTER TABLE changes ADD COLUMN placed_after INTEGER;
ALTER TABLE changes ADD COLUMN placement INTEGER NOT NULL DEFAULT 0;
DROP INDEX changes_dedupe;
CREATE UNIQUE INDEX changes_dedupe ON changes (public_id, version, local_revision, event_type) WHERE placement = 0;

-- Zero until the write path has filled feed_places for every record.
ALTER TABLE projection ADD COLUMN feed_filled INTEGER NOT NULL DEFAULT 0;
-- A file whose log is empty has nothing to fill.
UPDATE projection SET feed_filled = 1 WHERE NOT EXISTS (SELECT 1 FROM changes);
