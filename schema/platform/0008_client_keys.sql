-- Public keys a client authenticates with at the token endpoint instead of its secret (a JWT
-- assertion, private_key_jwt of RFC 7523): a JSON Web Key Set of RSA and EC public keys, as the JSON
-- of dirsvc.JWKS; NULL when the client has none. A client with keys may have no secret: its
-- secret_mac is then empty, which no secret's MAC equals.
ALTER TABLE clients ADD COLUMN jwks TEXT;

-- The keys an access request asks to register, installed on the client when the request is approved.
ALTER TABLE access_requests ADD COLUMN jwks TEXT;

-- The jti of every client assertion accepted, kept until the assertion has expired (with the clock
-- skew allowed): an assertion is used once, and a restart does not open a window for a replay. Rows
-- past expires_at (Unix seconds) are dropped as new ones are added.
CREATE TABLE assertion_ids (
    client_id  TEXT NOT NULL,
    jti        TEXT NOT NULL,
    expires_at INTEGER NOT NULL,
    PRIMARY KEY (client_id, jti)
) STRICT, WITHOUT ROWID;

CREATE INDEX assertion_ids_expiry ON assertion_ids (expires_at);
