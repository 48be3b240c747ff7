-- Version 2 of ops.db is taken by the federation moderation tables (forwarded proposals and issues);
-- this placeholder keeps the sequence whole until they land, and gives way to them.
SELECT 1;
