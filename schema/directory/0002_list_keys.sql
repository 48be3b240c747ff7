-- What lists, narrowing and identifier search filter on, per audience. Each key comes from a record's
-- views, so a key is only ever found by an audience whose view of the record carries it: a service
-- whose site is hidden from the public is not found by that site's area for the public.
--   area:<type:code>             a location's areas; a service's catchment (a service lies in the
--                                areas of its site when the audience sees the site: lists join them)
--   type:<code>                  a service's platform type
--   cat:<code>                   a service's platform category
--   active                       a practitioner role that is active
--   id:<system or type>|<value>  an identifier the audience may see (value upper-cased, no spaces)
CREATE TABLE list_keys (
    public_id TEXT NOT NULL,
    key       TEXT NOT NULL,
    audiences INTEGER NOT NULL,
    PRIMARY KEY (public_id, key)
) STRICT, WITHOUT ROWID;
CREATE INDEX list_keys_key ON list_keys (key, public_id);

-- Fill it from the views already published (the write path keeps it from now on). Each audience is
-- in one view row of a record, so the sum of a key's rows' audiences is their union.
WITH v AS (
    SELECT public_id, audiences & 7 AS aud, CAST(body AS TEXT) AS j FROM projections WHERE audiences & 7 != 0
), k AS (
    SELECT v.public_id, v.aud, 'area:' || a.value AS key
    FROM v, json_each(v.j, '$.areas') a WHERE v.public_id GLOB 'loc_*' AND a.type = 'text'
    UNION
    SELECT v.public_id, v.aud, 'area:' || a.value FROM v, json_each(v.j, '$.catchment') a
    WHERE v.public_id GLOB 'svc_*' AND a.type = 'text'
    UNION
    SELECT public_id, aud, 'type:' || (j ->> '$.type.code') FROM v WHERE public_id GLOB 'svc_*'
    UNION
    SELECT public_id, aud, 'cat:' || (j ->> '$.categoryCode') FROM v
    WHERE public_id GLOB 'svc_*' AND (j ->> '$.categoryCode') IS NOT NULL
    UNION
    SELECT public_id, aud, 'active' FROM v WHERE public_id GLOB 'role_*' AND (j ->> '$.active') = 1
    UNION
    SELECT v.public_id, v.aud, 'id:' || (i.value ->> 'system') || '|' || upper(replace(i.value ->> 'value', ' ', ''))
    FROM v, json_each(v.j, '$.identifiers') i WHERE i.type = 'object'
    UNION
    SELECT v.public_id, v.aud, 'id:' || (i.value ->> 'type') || '|' || upper(replace(i.value ->> 'value', ' ', ''))
    FROM v, json_each(v.j, '$.identifiers') i WHERE i.type = 'object'
)
INSERT INTO list_keys (public_id, key, audiences)
SELECT public_id, key, SUM(aud) FROM k GROUP BY public_id, key;

-- Replaced by the area keys above, which are per audience.
DROP TABLE record_areas;

-- Each served audience's view carries its own head (version, local revision, last update), moved on
-- only by a change that audience can see (dirdb/heads.go). audience_heads holds them with the hash
-- that tells a change; NULL for a row published before, whose next change gives every view a new
-- head. updated_ms is the time in a view's head, for updatedSince.
ALTER TABLE records ADD COLUMN audience_heads BLOB;
ALTER TABLE projections ADD COLUMN updated_ms INTEGER;
UPDATE projections SET updated_ms = CAST(round(unixepoch(CAST(body AS TEXT) ->> '$.lastUpdated', 'subsec') * 1000) AS INTEGER)
WHERE audiences & 7 != 0;
