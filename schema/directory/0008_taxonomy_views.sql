-- The taxonomy as each served audience sees it (dirsvc.ProjectTaxonomy), so an edge serves it from
-- its copy: the full taxonomy, hidden entries and all, stays in ops.db on the primary. Audiences
-- that see the same bytes share a row, as in projections. A primary fills it by republishing every
-- directory whose views an earlier projection version made (version 3 adds this table).
CREATE TABLE taxonomy_views (
    audiences INTEGER NOT NULL,
    body      BLOB NOT NULL,
    etag      TEXT NOT NULL
) STRICT;
