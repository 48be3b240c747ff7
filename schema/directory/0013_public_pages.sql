-- The records whose page the public tier sees, with the time of the public view's head: the sitemap
-- walks them in public-ID order (a range per kind) and counts them without reading a view's body.
CREATE INDEX projections_public ON projections (public_id, updated_ms) WHERE audiences & 1 = 1;
-- Its condition is written `= 1`, which no other statement's `audiences & ? != 0` matches, so the
-- plans of the reads that look up views by public ID never change for it.
