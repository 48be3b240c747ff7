// Package fhir maps the projected views of a directory's records (what one caller's tier and
// narrowing receives from the REST API) to FHIR R4 (4.0.1) JSON resources, and holds what a FHIR
// server needs beside them: search parameters and their matching, Bundles, OperationOutcomes, the
// CapabilityStatement, and the definitions of the service's own extension and code system. It
// serves nothing itself: the edge package serves the routes.
//
// Records map to resources one to one: an organisation to Organization, a location to Location, a
// service to HealthcareService, a practitioner to Practitioner and a practitioner role to
// PractitionerRole. A resource's id is the record's public ID with each underscore replaced by a
// hyphen (ResourceID, PublicID).
//
// An Endpoint stands for a service's online address: each website contact of a service (its
// booking, referral or information page) and the service's own website, in the order the
// service's view gives them. Its id is the service's resource id followed by "-ep" and the
// endpoint's position from 1 (svc-abc12345-ep1); it is managed by the service's organisation and
// listed in HealthcareService.endpoint. An Endpoint exists for a caller exactly when the service's
// view the caller receives carries that address.
//
// Resources are made only from views: a detail the view leaves out cannot appear. A reference to a
// record the caller may not read is left out (the caller's reader decides, see Refs).
//
// The ownership type of organisations, locations and services is carried by the extension
// OwnershipExtensionURL, whose value is a CodeableConcept of the code system OwnershipCodeSystemURL
// (a directory's own codes, of the form {directory}:{code}, carry only text). Both definitions are
// published by the service at those URLs (OwnershipStructureDefinition, OwnershipCodeSystem).
package fhir
