-- The roles of a service and of a practitioner in public-ID order, as the organisation's and site's
-- records are (0005): a page or FHIR reference that reads them walks the index without a sort, so its
-- cost is the number of roles (a test explains every statement of Related).
DROP INDEX records_service;
CREATE INDEX records_service ON records (service_id, public_id) WHERE service_id IS NOT NULL;
DROP INDEX records_practitioner;
CREATE INDEX records_practitioner ON records (practitioner_id, public_id) WHERE practitioner_id IS NOT NULL;
