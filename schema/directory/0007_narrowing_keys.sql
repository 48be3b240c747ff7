-- Where each organisation, site and practitioner lies for a client's narrowing, per audience, kept
-- by the write path (dirdb/narrowing.go) from the keys of the services that place it:
--   in:a:<area>             an organisation or practitioner with a service located in the area or
--                           whose catchment reaches it (an organisation's own sites count too)
--   in:c:<category>         an organisation, site or practitioner with a service of the category
--   in:ac:<area>|<category> an organisation or practitioner with one service that is both
-- A practitioner's services are those of their active roles. Each key's audiences see both the
-- record's service (or site) and the key on it. With these, whether such a record lies inside a
-- narrowing is a fixed number of index probes, the same as for a record the directory does not hold.
CREATE TABLE narrowing_keys (
    public_id TEXT NOT NULL,
    key       TEXT NOT NULL,
    audiences INTEGER NOT NULL,
    PRIMARY KEY (public_id, key)
) STRICT, WITHOUT ROWID;

-- Zero until the write path has filled narrowing_keys for every record; a primary fills them before
-- it serves (dirdb.Store.StaleViews).
ALTER TABLE projection ADD COLUMN narrowing_filled INTEGER NOT NULL DEFAULT 0;
