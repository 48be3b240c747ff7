-- Who a client is for: the contact address and the intended use given at sandbox sign-up (or by an
-- operator). They stay in the platform file, which never travels to edges.
ALTER TABLE clients ADD COLUMN contact TEXT;
ALTER TABLE clients ADD COLUMN purpose TEXT;
