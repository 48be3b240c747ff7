-- The directory a directory client (dirc_) belongs to, for life: a grant in another directory is
-- refused even after its own grant was removed. Partner-organisation clients (dirp_) have none. A
-- directory client stored before this column existed takes the directory of its grant; one whose
-- grant was already removed keeps none and can be granted nothing again (make a new client).
ALTER TABLE clients ADD COLUMN directory TEXT;
UPDATE clients SET directory = (SELECT g.directory FROM grants g WHERE g.client_id = clients.client_id ORDER BY g.directory LIMIT 1)
WHERE client_id GLOB 'dirc_*';
