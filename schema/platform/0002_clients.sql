-- Partner clients and their grants, access requests, and the public halves of the token signing keys.

-- A client's secret is never stored: secret_mac is HMAC-SHA256 of it under the server key. A revoked
-- client keeps its row, so its ID is never issued again.
CREATE TABLE clients (
    client_id  TEXT PRIMARY KEY CHECK (client_id GLOB 'dirp_*' OR client_id GLOB 'dirc_*'),
    name       TEXT NOT NULL,
    sandbox    INTEGER NOT NULL DEFAULT 0 CHECK (sandbox IN (0, 1)),
    secret_mac BLOB NOT NULL,
    created_at TEXT NOT NULL,
    rotated_at TEXT,
    revoked_at TEXT
) STRICT;

-- What one directory gave one client: tier, agreement, scopes, narrowing and rate limit, as the JSON
-- of dirsvc.Grant.
CREATE TABLE grants (
    client_id TEXT NOT NULL REFERENCES clients (client_id) ON DELETE CASCADE,
    directory TEXT NOT NULL,
    doc       BLOB NOT NULL,
    PRIMARY KEY (client_id, directory)
) STRICT, WITHOUT ROWID;

-- Requests for access to a directory; practitioner_list_reason says why practitioners are needed in
-- bulk (required when practitioners:read is asked for).
CREATE TABLE access_requests (
    id                       INTEGER PRIMARY KEY,
    client_id                TEXT NOT NULL REFERENCES clients (client_id) ON DELETE CASCADE,
    directory                TEXT NOT NULL,
    scopes                   TEXT NOT NULL,
    practitioner_list_reason TEXT,
    status                   TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'granted', 'refused')),
    created_at               TEXT NOT NULL
) STRICT;

-- Token signing keys (Ed25519). Only the public key is stored: the private key is derived from the
-- server key and the key ID, so it never sits in a file that travels.
CREATE TABLE signing_keys (
    kid        TEXT PRIMARY KEY,
    public_key BLOB NOT NULL CHECK (length(public_key) = 32),
    created_at TEXT NOT NULL
) STRICT;
