-- Indexes that drive every service list in public-ID order, so a page reads about as many rows as it
-- returns whatever its filters (dirdb/lists.go names them in INDEXED BY; a test explains every list
-- query shape and fails on a full scan or a sort). No statistics: plans must not depend on them.

-- The keys, covering: a filter walks its keys' services in public-ID order and checks the audience
-- without reading the table.
DROP INDEX list_keys_key;
CREATE INDEX list_keys_key ON list_keys (key, public_id, audiences);

-- The services of an organisation and of a site, in public-ID order and without reading the table.
DROP INDEX records_organisation;
CREATE INDEX records_organisation ON records (organisation_id, public_id) WHERE organisation_id IS NOT NULL;
DROP INDEX records_location;
CREATE INDEX records_location ON records (location_id, public_id) WHERE location_id IS NOT NULL;

-- The views of services, sites and organisations changed at or after a time (updatedSince), each kind
-- on its own, so a recent time reads only what changed.
CREATE INDEX projections_updated_service ON projections (updated_ms) WHERE public_id >= 'svc_' AND public_id < 'svc`';
CREATE INDEX projections_updated_location ON projections (updated_ms) WHERE public_id >= 'loc_' AND public_id < 'loc`';
CREATE INDEX projections_updated_organisation ON projections (updated_ms) WHERE public_id >= 'org_' AND public_id < 'org`';

-- site:<type:code> keys: the areas of a service's site as the service's view shows them, so the area
-- filter walks one index in public-ID order. They find candidates only: a list still checks the
-- site's own area key for the audience, as before (keys.go).
INSERT INTO list_keys (public_id, key, audiences)
SELECT public_id, key, SUM(aud) FROM (
    SELECT DISTINCT p.public_id, p.audiences & 7 AS aud, 'site:' || a.value AS key
    FROM projections p, json_each(CAST(p.body AS TEXT), '$.areas') a
    WHERE p.public_id >= 'svc_' AND p.public_id < 'svc`' AND p.audiences & 7 != 0 AND a.type = 'text'
) GROUP BY public_id, key;
