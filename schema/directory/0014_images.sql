-- Published images (organisation logos, practitioner photos), kept here so that every edge has them.
-- A record's view names an image by its path (/v1/d/{dir}/images/{sha256}.{ext}); list_keys holds
-- img:<sha256> for the audiences whose view names it, and only they are served the image.
CREATE TABLE images (
    sha256     TEXT PRIMARY KEY,
    media_type TEXT NOT NULL CHECK (media_type IN ('image/png', 'image/jpeg', 'image/webp')),
    body       BLOB NOT NULL,
    added_at   TEXT NOT NULL
) STRICT;
