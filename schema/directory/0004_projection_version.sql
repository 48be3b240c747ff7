-- The version of the projection rules that made the stored views (dirsvc.ProjectionVersion). A
-- primary publishes again, before it serves, a directory whose views an older version made: an
-- upgrade that shows an audience less than before takes effect on every copy without anyone
-- importing again. Files made before this table existed hold views of version 1.
CREATE TABLE projection (
    id      INTEGER PRIMARY KEY CHECK (id = 1),
    version INTEGER NOT NULL
) STRICT;
INSERT INTO projection (id, version) VALUES (1, 1);
