-- Directories served by this platform, and the switches only a platform operator sets.
CREATE TABLE directories (
    slug        TEXT PRIMARY KEY,
    created_at  TEXT NOT NULL,
    -- Senior management (leadership) is shown only when the platform makes it available here and the
    -- directory switches it on in its own settings.
    senior_management_available INTEGER NOT NULL DEFAULT 0 CHECK (senior_management_available IN (0, 1))
) STRICT;
