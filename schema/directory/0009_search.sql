-- Search documents (dirdb/search.go): for each service, what search finds, filters, facets and
-- sorts it by, as each served audience sees it. A document is made from the audience's published
-- views only (the service's, its site's, its organisation's, its roles'), so no audience finds,
-- counts or ranks a service by a detail hidden from it. Audiences that get the same document share
-- one row. IDs are never reused: a service's documents are replaced with new rows on every change,
-- so a reader keeping documents in memory reads the rows after the last ID it holds and drops the
-- IDs search_gone lists after its last sequence number.
CREATE TABLE search_docs (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    service_id TEXT NOT NULL,
    audiences  INTEGER NOT NULL,
    doc        BLOB NOT NULL
) STRICT;
CREATE INDEX search_docs_service ON search_docs (service_id);

CREATE TABLE search_gone (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id  INTEGER NOT NULL
) STRICT;

-- The words of each document, one full-text index per served audience (bits 1, 2 and 4), so that
-- an audience's ranking statistics hold only what it sees. Contentless: the text lives in the views.
CREATE VIRTUAL TABLE search_text_1 USING fts5 (name, specialties, organisation, place, practitioners, description,
    content = '', contentless_delete = 1, tokenize = 'unicode61 remove_diacritics 2');
CREATE VIRTUAL TABLE search_text_2 USING fts5 (name, specialties, organisation, place, practitioners, description,
    content = '', contentless_delete = 1, tokenize = 'unicode61 remove_diacritics 2');
CREATE VIRTUAL TABLE search_text_4 USING fts5 (name, specialties, organisation, place, practitioners, description,
    content = '', contentless_delete = 1, tokenize = 'unicode61 remove_diacritics 2');

-- search_epoch changes whenever every document is made anew (a reader then reloads them all);
-- search_filled is zero until the write path has made every service's documents.
ALTER TABLE projection ADD COLUMN search_filled INTEGER NOT NULL DEFAULT 0;
ALTER TABLE projection ADD COLUMN search_epoch INTEGER NOT NULL DEFAULT 0;
