-- Tokens no node honours any more, though they have not expired: a client's access tokens issued
-- before valid_from (Unix seconds) are refused. Every change to a client's access (revoked, secret
-- rotated, a grant added, changed or removed) sets it in the same transaction, and the edges receive
-- it with the platform, so the change takes effect on every node at once instead of when the
-- client's last token expires. A row is dropped once every token it refuses has expired anyway.
CREATE TABLE token_cutoffs (
    client_id  TEXT PRIMARY KEY,
    valid_from INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

-- A signing key is retired by deleting its row: tokens it signed are refused from then on. Nothing
-- else refers to a key.
