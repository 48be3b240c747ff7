-- The collections each served audience may see (dirsvc.ProjectCollection), so an edge serves them
-- from its copy: drafts are never published, and a collection's own audiences decide the rows it is
-- in. Dates are kept in the body: whether a collection shows depends on the day it is read, in the
-- directory's time zone. The collections as imported, drafts and all, stay in ops.db on the
-- primary. A primary fills the table by republishing every directory whose views an earlier
-- projection version made (version 4 adds it).
CREATE TABLE collection_views (
    slug      TEXT NOT NULL,
    position  INTEGER NOT NULL,
    audiences INTEGER NOT NULL,
    body      BLOB NOT NULL,
    PRIMARY KEY (slug, audiences)
) STRICT;

-- lt:<code> keys: the local types (specialties) a service is tagged with, as the audience's view
-- shows them, so that a category made of local types counts exactly the services tagged with them
-- (keys.go). Filled from each service view's specialties, per audience, as publishing writes them.
INSERT INTO list_keys (public_id, key, audiences)
SELECT public_id, key, SUM(aud) FROM (
    SELECT DISTINCT p.public_id, p.audiences & 7 AS aud, 'lt:' || (s.value ->> 'id') AS key
    FROM projections p, json_each(CAST(p.body AS TEXT), '$.specialties') s
    WHERE p.public_id >= 'svc_' AND p.public_id < 'svc`' AND p.audiences & 7 != 0 AND s.type = 'object'
) GROUP BY public_id, key;
