-- pg:<code> and tg:<code> keys: the programs and target groups of a service, as the audience's view
-- shows them (keys.go). With the type: and lt: keys they tell which entries of the taxonomy the
-- services each audience sees use: an audience's taxonomy lists only those (dirsvc.ProjectTaxonomy),
-- so no entry that only hidden services use is published. Filled from each service view, per
-- audience, as publishing writes them; a primary then publishes each directory's taxonomy again
-- (projection version 6).
INSERT INTO list_keys (public_id, key, audiences)
SELECT public_id, key, SUM(aud) FROM (
    SELECT DISTINCT p.public_id, p.audiences & 7 AS aud, 'pg:' || (x.value ->> 'code') AS key
    FROM projections p, json_each(CAST(p.body AS TEXT), '$.programs') x
    WHERE p.public_id >= 'svc_' AND p.public_id < 'svc`' AND p.audiences & 7 != 0 AND x.type = 'object'
    UNION ALL
    SELECT DISTINCT p.public_id, p.audiences & 7 AS aud, 'tg:' || (x.value ->> 'code') AS key
    FROM projections p, json_each(CAST(p.body AS TEXT), '$.targetGroups') x
    WHERE p.public_id >= 'svc_' AND p.public_id < 'svc`' AND p.audiences & 7 != 0 AND x.type = 'object'
) GROUP BY public_id, key;
