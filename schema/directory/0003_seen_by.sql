-- seen_by of a record closed, removed or merged named every audience that would have seen it were it
-- live, even when it never was (a record imported already closed): those audiences got 410 or 301
-- where a missing record answers 404. It now names who saw the record the last time it was visible,
-- which is who its tombstone event went to; a record with no tombstone event was never seen.
UPDATE records SET seen_by = COALESCE((
    SELECT c.audiences FROM changes c
    WHERE c.public_id = records.public_id AND c.event_type IN ('closed', 'deleted', 'merged')
    ORDER BY c.seq DESC LIMIT 1), 0)
WHERE state IN ('closed', 'removed', 'merged');
