-- A client has at most one pending access request per directory: asked again, it is told of the one
-- that waits, and the operators' queue stays bounded by clients and directories.
CREATE UNIQUE INDEX access_requests_pending ON access_requests (client_id, directory) WHERE status = 'pending';
