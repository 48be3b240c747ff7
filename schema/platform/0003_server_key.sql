-- Which server key the client secrets' MACs were made under, so that a start given another key (a
-- data folder restored without its server key) says so before every partner client fails to
-- authenticate. A key is named by its check value, HMAC-SHA256 of a fixed label under the key: it
-- tells keys apart and reveals nothing of them.

-- The data folder's server key, recorded by a start once no active client's MAC contradicts it: new
-- clients and new secrets are marked with its check value. legacy_kid is the newest token signing key
-- when this migration ran: the MACs of clients stored before check values were kept were made under
-- the server key that derives it.
CREATE TABLE server_key (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    check_value BLOB CHECK (length(check_value) = 32),
    legacy_kid  TEXT,
    recorded_at TEXT
) STRICT;

INSERT INTO server_key (id, legacy_kid)
VALUES (1, (SELECT kid FROM signing_keys ORDER BY created_at DESC, kid DESC LIMIT 1));

-- The check value of the server key the client's secret MAC was made under; NULL for a client stored
-- before check values were kept (see server_key.legacy_kid).
ALTER TABLE clients ADD COLUMN key_check BLOB;
