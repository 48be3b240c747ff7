-- tc:<type>|<category> keys: a service's type and category together, so a list filtered by both
-- walks only the services that have both (keys.go). Filled from each service view's type and
-- category, per audience, as publishing writes them.
INSERT INTO list_keys (public_id, key, audiences)
SELECT public_id, key, SUM(aud) FROM (
    SELECT DISTINCT p.public_id, p.audiences & 7 AS aud,
        'tc:' || json_extract(CAST(p.body AS TEXT), '$.type.code') || '|' || json_extract(CAST(p.body AS TEXT), '$.categoryCode') AS key
    FROM projections p
    WHERE p.public_id >= 'svc_' AND p.public_id < 'svc`' AND p.audiences & 7 != 0
        AND json_extract(CAST(p.body AS TEXT), '$.categoryCode') IS NOT NULL
) GROUP BY public_id, key;
