-- Forwarded proposals and issues (section 4.8) and their moderation, kept on the primary only.
--
-- One row per item a partner client forwarded. status is the moderation status: pending, approving (a
-- proposal an operator accepted, waiting for the approval that publishes it), accepted (published),
-- rejected, withdrawn, resolved, no_action. changes holds a proposal's changes as JSON
-- [{"field","base","text"}], base being the text stored when it was proposed. Reporter details are
-- stored only when the reporter agreed to be contacted (reporter_* NULL otherwise).
CREATE TABLE forwarded (
    id                TEXT PRIMARY KEY,
    kind              TEXT NOT NULL CHECK (kind IN ('proposal', 'issue')),
    client_id         TEXT NOT NULL,
    public_id         TEXT NOT NULL,
    record_kind       TEXT NOT NULL,
    organisation      TEXT NOT NULL DEFAULT '', -- the organisation whose stewards the item is routed to
    status            TEXT NOT NULL CHECK (status IN ('pending', 'approving', 'accepted', 'rejected', 'withdrawn',
                                                      'resolved', 'no_action')),
    reason            TEXT NOT NULL DEFAULT '',
    changes           BLOB,
    gated             INTEGER NOT NULL DEFAULT 0,
    message           TEXT NOT NULL DEFAULT '',
    reference         TEXT NOT NULL DEFAULT '',
    category          TEXT NOT NULL DEFAULT '',
    reporter_name     TEXT,
    reporter_email    TEXT,
    reporter_phone    TEXT,
    published_version INTEGER NOT NULL DEFAULT 0,
    created_at        TEXT NOT NULL,
    updated_at        TEXT NOT NULL
) STRICT;
CREATE INDEX forwarded_status ON forwarded (status, created_at);
CREATE INDEX forwarded_client ON forwarded (client_id, created_at);

-- What operators did to an item, in order: accept, approve, reject, resolve, no_action, and the
-- client's withdraw (operator empty). role is the operator's role when the action was taken.
CREATE TABLE forwarded_actions (
    seq      INTEGER PRIMARY KEY AUTOINCREMENT,
    item_id  TEXT NOT NULL REFERENCES forwarded (id) ON DELETE CASCADE,
    at       TEXT NOT NULL,
    action   TEXT NOT NULL,
    operator TEXT NOT NULL DEFAULT '',
    role     TEXT NOT NULL DEFAULT '',
    note     TEXT NOT NULL DEFAULT ''
) STRICT;
CREATE INDEX forwarded_actions_item ON forwarded_actions (item_id, seq);

-- The directory's moderators: curators (role curator, organisation empty) act on every record and
-- approve gated fields; stewards (role steward) act for the records of one organisation.
CREATE TABLE moderators (
    name         TEXT NOT NULL,
    role         TEXT NOT NULL CHECK (role IN ('curator', 'steward')),
    organisation TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (name, role, organisation)
) STRICT;
