// Package federation holds the primary's side of federation (section 4.8): forwarded proposals and
// issues from aggregator clients, the moderation queue they enter, and mirroring of records from
// other directories.
//
// Forwarded items. A client with graph:propose (federation:harvest implies it) forwards a proposal
// (new text for some text fields of one record, and a message) or an issue (a category and a
// message about one listing, with the reporter's contact details only when the reporter agreed to be
// contacted). A record hidden from the client answers exactly as a missing one; a record this
// directory mirrors from another answers 409 mirrored-record. The client reads its receipt (and may
// withdraw the item while nothing is decided); any other client reads the not-found answer.
//
// Moderation. Items are routed by the record's organisation: its stewards (moderators named for the
// organisation) and the directory's curators act on them. A proposal goes pending → approving (an
// operator accepted it) → accepted once approved and published through the record write path, so
// the record gets a new version and the change reaches the change feed; a curator approves gated
// fields (names), a steward the rest (curators stand in for an organisation without stewards). A
// proposal whose fields changed since it was made is closed as rejected (stale) when approved. A
// proposal may be rejected or withdrawn before it is published; an issue ends resolved or no_action.
package federation
