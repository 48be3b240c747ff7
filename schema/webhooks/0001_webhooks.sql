-- A directory's webhook endpoints and their deliveries, kept on the primary only and never replicated
-- to edges. The file is written by the delivery workers beside imports (which hold the directory's
-- other files for their whole length), so it is a file of its own.

-- One row per registered endpoint. Secrets are sealed with a key derived from the server key: the file
-- alone does not give them away. position is the change log sequence after which the endpoint's next
-- message starts.
CREATE TABLE endpoints (
    id              TEXT PRIMARY KEY,
    client_id       TEXT NOT NULL,
    url             TEXT NOT NULL,
    description     TEXT NOT NULL DEFAULT '',
    state           TEXT NOT NULL CHECK (state IN ('active', 'paused', 'disabled')),
    state_reason    TEXT NOT NULL DEFAULT '',
    secret          BLOB NOT NULL,
    previous_secret BLOB,
    previous_until  TEXT,
    position        INTEGER NOT NULL,
    failing_since   TEXT,
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL
) STRICT;
CREATE INDEX endpoints_client ON endpoints (client_id, created_at);

-- One row per message to an endpoint. Its ID is the message's webhook-id. Feed messages of an endpoint
-- are sent in seq order, one at a time; from_seq and to_seq are the change log positions the message
-- spans (a ping spans none).
CREATE TABLE deliveries (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    id           TEXT NOT NULL UNIQUE,
    endpoint_id  TEXT NOT NULL REFERENCES endpoints (id) ON DELETE CASCADE,
    kind         TEXT NOT NULL CHECK (kind IN ('feed.changes', 'webhook.ping')),
    status       TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'failed', 'dead')),
    items        INTEGER NOT NULL,
    -- Rounds of attempts made (each one HTTP request, or a few close together): the retry schedule's step.
    rounds       INTEGER NOT NULL DEFAULT 0,
    from_seq     INTEGER NOT NULL,
    to_seq       INTEGER NOT NULL,
    body         BLOB NOT NULL,
    next_attempt TEXT,
    created_at   TEXT NOT NULL
) STRICT;
-- The next delivery of an endpoint (the oldest neither delivered nor dead), and its log by time.
CREATE INDEX deliveries_open ON deliveries (endpoint_id, seq) WHERE status IN ('pending', 'failed');
CREATE INDEX deliveries_log ON deliveries (endpoint_id, created_at);
CREATE INDEX deliveries_created ON deliveries (created_at);

CREATE TABLE attempts (
    delivery_seq INTEGER NOT NULL REFERENCES deliveries (seq) ON DELETE CASCADE,
    at           TEXT NOT NULL,
    status       INTEGER NOT NULL,
    duration_ms  INTEGER NOT NULL,
    error        TEXT NOT NULL DEFAULT ''
) STRICT;
CREATE INDEX attempts_delivery ON attempts (delivery_seq);
