package dirdb

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/dirsvc/dirsvc"
	jsonv2 "github.com/go-json-experiment/json"
)

// The write path keeps the search documents (search.go) of every service in step with its views:
// each write notes the records whose publication changed, and before it commits makes anew the
// documents of the services they bear on: a service's own; a site's services (its address,
// position and facilities); an organisation's services (its name); a role's service and a
// practitioner's services (the names they show). A first import, a write that touches many
// records, or a file whose documents were never made makes every document anew.

// touchedSearch notes a record whose publication changed, with its references before and after.
func (w *writeTx) touchedSearch(kind dirsvc.Kind, id string, before, after [4]string) {
	if w.searchAll {
		return
	}
	if w.searching == nil {
		w.searching = map[string]bool{}
	}
	w.searching[id] = true
	if kind == dirsvc.KindRole {
		for _, s := range []string{before[2], after[2]} {
			if s != "" {
				w.searching[s] = true
			}
		}
	}
	if len(w.searching) >= wholeRefresh {
		w.searchAll, w.searching = true, nil
	}
}

// wholeSearch reports whether the write's search step makes every service's documents anew: its
// changes touch many records, or the file's documents were never made.
func (w *writeTx) wholeSearch() (bool, error) {
	var filled int
	if err := w.pub.QueryRowContext(w.ctx, "SELECT search_filled FROM projection WHERE id = 1").Scan(&filled); err != nil {
		return false, fmt.Errorf("read the search documents' state: %w", err)
	}
	return filled == 0 || w.searchAll, nil
}

// refreshSearch makes anew the search documents of the services the write's changes bear on, or of
// every service when they are many or the file's documents were never made.
func (w *writeTx) refreshSearch() error {
	whole, err := w.wholeSearch()
	if err != nil {
		return err
	}
	defer func() { w.searching, w.searchAll = nil, false }()
	if whole {
		if err := w.allSearchDocs(); err != nil {
			return err
		}
		if err := w.flushSearchWords(); err != nil {
			return err
		}
		_, err := w.pub.ExecContext(w.ctx, "UPDATE projection SET search_filled = 1, search_epoch = search_epoch + 1 WHERE id = 1")
		if err != nil {
			return fmt.Errorf("record the search documents' state: %w", err)
		}
		return nil
	}
	services, err := w.searchedServices()
	if err != nil {
		return err
	}
	for _, id := range services {
		if err := w.dropSearchDocs(id); err != nil {
			return err
		}
		views, err := w.viewsOf(id)
		if err != nil {
			return err
		}
		sv, err := viewsByBit[dirsvc.ServiceView](views)
		if err != nil {
			return err
		}
		if len(sv) == 0 {
			continue // no audience sees it any more: its documents are gone
		}
		sites := map[int64]*dirsvc.LocationView{}
		if site := siteOfViews(sv); site != "" {
			if views, err = w.viewsOf(site); err != nil {
				return err
			}
			if sites, err = viewsByBit[dirsvc.LocationView](views); err != nil {
				return err
			}
		}
		roles := map[int64][]*dirsvc.RoleView{}
		err = w.eachRow(w.pub, `
SELECT p.audiences, p.body FROM records r INDEXED BY records_service
JOIN projections p ON p.public_id = r.public_id
WHERE r.service_id = ? AND r.kind = 'role' ORDER BY r.public_id`, []any{id}, func(s scanner) error {
			return addRoleView(roles, s)
		})
		if err != nil {
			return fmt.Errorf("read the roles of %s: %w", id, err)
		}
		if err := w.putSearchDocs(id, sv, sites, roles); err != nil {
			return err
		}
	}
	if err := w.flushSearchWords(); err != nil {
		return err
	}
	// Only the latest removals are kept: a reader whose index is older than the first kept reads
	// every document again (freshSearch).
	if err := w.exec(w.pub, "DELETE FROM search_gone WHERE seq <= (SELECT max(seq) FROM search_gone) - ?", goneKept); err != nil {
		return fmt.Errorf("forget old removals of search documents: %w", err)
	}
	return nil
}

// goneKept is how many removals of search documents the file keeps for readers that follow it; a
// variable so that a test can make readers fall behind.
var goneKept = 100_000

// searchedServices returns the services whose documents the write's changes bear on, in order.
func (w *writeTx) searchedServices() ([]string, error) {
	set := map[string]bool{}
	for id := range w.searching {
		var query string
		switch dirsvc.KindOfID(id) {
		case dirsvc.KindService:
			set[id] = true
			continue
		case dirsvc.KindLocation:
			query = "SELECT public_id FROM records INDEXED BY records_location WHERE location_id = ? AND kind = 'service'"
		case dirsvc.KindOrganisation:
			query = "SELECT public_id FROM records INDEXED BY records_organisation WHERE organisation_id = ? AND kind = 'service'"
		case dirsvc.KindPractitioner:
			query = "SELECT DISTINCT service_id FROM records INDEXED BY records_practitioner WHERE practitioner_id = ? AND kind = 'role'"
		default:
			continue
		}
		ids, err := queryStrings(w.ctx, w.pub, query, id)
		if err != nil {
			return nil, fmt.Errorf("find the services of %s: %w", id, err)
		}
		for _, s := range ids {
			set[s] = true
		}
	}
	out := make([]string, 0, len(set))
	for id := range set {
		out = append(out, id)
	}
	slices.Sort(out)
	return out, nil
}

// storedView is one stored view row: the audiences that receive it and its body.
type storedView struct {
	audiences int64
	body      []byte
}

// viewsOf reads the stored views of a record.
func (w *writeTx) viewsOf(id string) ([]storedView, error) {
	var out []storedView
	err := w.eachRow(w.pub, "SELECT audiences, body FROM projections WHERE public_id = ?", []any{id}, func(s scanner) error {
		var v storedView
		if err := s.Scan(&v.audiences, &v.body); err != nil {
			return err
		}
		out = append(out, v)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the views of %s: %w", id, err)
	}
	return out, nil
}

// viewsByBit decodes each served audience's view of a record from its stored rows. A whole refresh
// of the search documents decodes every view of every service, site and role, so it decodes with the
// JSON v2 implementation (github.com/go-json-experiment/json), in about half the time of
// encoding/json: views are written by encoding/json from the same types, so the two read them alike
// (exact-case names, valid UTF-8, no duplicate names; TestViewsDecodeAsEncodingJSONReadsThem).
func viewsByBit[T any](rows []storedView) (map[int64]*T, error) {
	out := map[int64]*T{}
	for _, r := range rows {
		if r.audiences&servedBits == 0 {
			continue // an organisation's leadership
		}
		v := new(T)
		if err := jsonv2.Unmarshal(r.body, v); err != nil {
			return nil, fmt.Errorf("decode a view: %w", err)
		}
		for _, a := range dirsvc.ServedAudiences {
			if bit := audienceBit(a); r.audiences&bit != 0 {
				out[bit] = v
			}
		}
	}
	return out, nil
}

// servedBits are the bits of the served audiences in a stored audience set.
const servedBits = 1<<dirsvc.Public | 1<<dirsvc.Professional | 1<<dirsvc.Partner

// siteOfViews returns the site a service's views name, if any does.
func siteOfViews(views map[int64]*dirsvc.ServiceView) string {
	for _, v := range views {
		if v.Location != nil {
			return v.Location.PublicID
		}
	}
	return ""
}

// addRoleView decodes a stored role view (audiences, body) into roles, under each audience's bit.
func addRoleView(roles map[int64][]*dirsvc.RoleView, s scanner) error {
	var v storedView
	if err := s.Scan(&v.audiences, &v.body); err != nil {
		return err
	}
	byBit, err := viewsByBit[dirsvc.RoleView]([]storedView{v})
	for bit, r := range byBit {
		roles[bit] = append(roles[bit], r)
	}
	return err
}

// dropSearchDocs removes a service's search documents and their words, noting each removed ID for
// readers that keep documents in memory.
func (w *writeTx) dropSearchDocs(service string) error {
	type stored struct{ id, audiences int64 }
	var old []stored
	err := w.eachRow(w.pub, "SELECT id, audiences FROM search_docs WHERE service_id = ?", []any{service}, func(s scanner) error {
		var d stored
		err := s.Scan(&d.id, &d.audiences)
		old = append(old, d)
		return err
	})
	if err != nil {
		return fmt.Errorf("read the search documents of %s: %w", service, err)
	}
	for _, d := range old {
		w.searchDropped = append(w.searchDropped, storedDoc{id: d.id, audiences: d.audiences})
		if err := w.exec(w.pub, "DELETE FROM search_docs WHERE id = ?", d.id); err != nil {
			return fmt.Errorf("remove a search document of %s: %w", service, err)
		}
		if err := w.exec(w.pub, "INSERT INTO search_gone (id) VALUES (?)", d.id); err != nil {
			return fmt.Errorf("note a removed search document of %s: %w", service, err)
		}
	}
	return nil
}

// putSearchDocs stores the search documents of a service made from its views, and their words.
func (w *writeTx) putSearchDocs(service string, views map[int64]*dirsvc.ServiceView, sites map[int64]*dirsvc.LocationView, roles map[int64][]*dirsvc.RoleView) error {
	docs, err := serviceDocs(views, sites, roles)
	if err != nil {
		return err
	}
	return w.storeSearchDocs(service, docs)
}

// storeSearchDocs stores a service's search documents; their words wait for flushSearchWords.
func (w *writeTx) storeSearchDocs(service string, docs []docRow) error {
	return w.storeSearchDocsOf([]string{service}, [][]docRow{docs})
}

// docsPerStatement bounds the search documents one statement stores.
const docsPerStatement = 256

// storeSearchDocsOf stores the search documents of services (docs[i] those of services[i]), in
// order, many to a statement; their words wait for flushSearchWords. The IDs of a statement's rows
// follow one another (search_docs is AUTOINCREMENT and the write alone inserts), so the last
// inserted gives them all.
func (w *writeTx) storeSearchDocsOf(services []string, docs [][]docRow) error {
	type pending struct {
		service string
		doc     docRow
	}
	var rows []pending
	for i, ds := range docs {
		for _, d := range ds {
			rows = append(rows, pending{services[i], d})
		}
	}
	for chunk := range slices.Chunk(rows, docsPerStatement) {
		args := make([]any, 0, 3*len(chunk))
		for _, r := range chunk {
			args = append(args, r.service, r.doc.audiences, r.doc.doc)
		}
		q := "INSERT INTO search_docs (service_id, audiences, doc) VALUES " + strings.TrimSuffix(strings.Repeat("(?, ?, ?), ", len(chunk)), ", ")
		res, err := w.execResult(w.pub, q, args...)
		var last, n int64
		if err == nil {
			if last, err = res.LastInsertId(); err == nil {
				n, err = res.RowsAffected()
			}
		}
		if err == nil && n != int64(len(chunk)) {
			err = fmt.Errorf("%d rows stored of %d", n, len(chunk))
		}
		if err != nil {
			return fmt.Errorf("store the search documents of %s to %s: %w", chunk[0].service, chunk[len(chunk)-1].service, err)
		}
		for i, r := range chunk {
			id := last - int64(len(chunk)-1-i)
			w.searchWords = append(w.searchWords, storedWords{storedDoc{id, r.doc.audiences}, r.doc.text})
		}
	}
	return nil
}

// The words of the documents a write removes and adds wait until it has made them all (in memory,
// or for a whole refresh in a temporary table: keepWords), then go to each audience's full-text
// index in statements of many rows: the full-text index writes what it holds in memory at every
// statement of the write, so a statement per document would make it write, and then merge, as many
// small segments.

// storedDoc is a stored search document's ID and audiences.
type storedDoc struct{ id, audiences int64 }

// storedWords is a stored search document with its words.
type storedWords struct {
	storedDoc
	text searchText
}

// wordsPerStatement bounds the documents one statement adds to or removes from a full-text index
// (each added takes 7 parameters, 8 on the way to the bulk table).
const wordsPerStatement = 500

// From bulkWords documents on, their words go to the full-text indexes through a temporary table,
// from which one statement per index adds them all with an in-memory hash of bulkHashSize (FTS5's
// default, which the indexes keep for every other write, is defaultHashSize): the index then
// writes a few large segments instead of one per statement, and merges far fewer.
const (
	bulkWords       = 1000
	bulkHashSize    = 64 << 20
	defaultHashSize = 1 << 20
)

// flushSearchWords writes the words waiting in memory into the full-text indexes.
func (w *writeTx) flushSearchWords() error {
	defer func() { w.searchWords, w.searchDropped = nil, nil }()
	for _, a := range dirsvc.ServedAudiences {
		bit := audienceBit(a)
		table := fmt.Sprintf("search_text_%d", bit)
		var ids []any
		for _, d := range w.searchDropped {
			if d.audiences&bit != 0 {
				ids = append(ids, d.id)
			}
		}
		for chunk := range slices.Chunk(ids, wordsPerStatement) {
			q := "DELETE FROM " + table + " WHERE rowid IN (?" + strings.Repeat(", ?", len(chunk)-1) + ")"
			if _, err := w.pub.ExecContext(w.ctx, q, chunk...); err != nil {
				return fmt.Errorf("remove the words of changed services: %w", err)
			}
		}
	}
	if w.wordsKept || len(w.searchWords) >= bulkWords {
		return w.bulkSearchWords()
	}
	for _, a := range dirsvc.ServedAudiences {
		bit := audienceBit(a)
		table := fmt.Sprintf("search_text_%d", bit)
		var rows []storedWords
		for _, d := range w.searchWords {
			if d.audiences&bit != 0 {
				rows = append(rows, d)
			}
		}
		for chunk := range slices.Chunk(rows, wordsPerStatement) {
			args := make([]any, 0, 7*len(chunk))
			for _, d := range chunk {
				t := d.text
				args = append(args, d.id, t.name, t.specialties, t.organisation, t.place, t.practitioners, t.description)
			}
			q := "INSERT INTO " + table + " (rowid, " + wordColumns + ") VALUES " +
				strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?, ?, ?), ", len(chunk)), ", ")
			if _, err := w.pub.ExecContext(w.ctx, q, args...); err != nil {
				return fmt.Errorf("index the words of changed services: %w", err)
			}
		}
	}
	return nil
}

// keepWords moves the words waiting in memory to the temporary table bulkSearchWords indexes them
// from, making the table on first use. A whole refresh keeps each batch's words there as it stores
// the batch's documents, while the next batch's are being made.
func (w *writeTx) keepWords() error {
	if !w.wordsKept {
		if _, err := w.pub.ExecContext(w.ctx, "CREATE TEMP TABLE bulk_words (id INTEGER PRIMARY KEY, audiences INTEGER NOT NULL, "+wordColumns+")"); err != nil {
			return fmt.Errorf("make the table of words to index: %w", err)
		}
		w.wordsKept = true
	}
	for chunk := range slices.Chunk(w.searchWords, wordsPerStatement) {
		args := make([]any, 0, 8*len(chunk))
		for _, d := range chunk {
			t := d.text
			args = append(args, d.id, d.audiences, t.name, t.specialties, t.organisation, t.place, t.practitioners, t.description)
		}
		q := "INSERT INTO temp.bulk_words (id, audiences, " + wordColumns + ") VALUES " +
			strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?, ?, ?, ?), ", len(chunk)), ", ")
		if err := w.exec(w.pub, q, args...); err != nil {
			return fmt.Errorf("keep the words to index: %w", err)
		}
	}
	clear(w.searchWords) // the texts are large: hold none of them
	w.searchWords = w.searchWords[:0]
	return nil
}

// wordColumns are the columns of a search document's words in the full-text indexes.
const wordColumns = "name, specialties, organisation, place, practitioners, description"

// bulkSearchWords writes the many words waiting, in memory and in the temporary table of keepWords,
// into the full-text indexes through that table (see bulkWords). The table lives in the write's
// transaction and is gone after it.
func (w *writeTx) bulkSearchWords() error {
	if err := w.keepWords(); err != nil {
		return err
	}
	for _, a := range dirsvc.ServedAudiences {
		bit := audienceBit(a)
		table := fmt.Sprintf("search_text_%d", bit)
		if err := w.ftsHashSize(table, bulkHashSize); err != nil {
			return err
		}
		q := "INSERT INTO " + table + " (rowid, " + wordColumns + ") SELECT id, " + wordColumns + " FROM temp.bulk_words WHERE audiences & ? != 0 ORDER BY id"
		if _, err := w.pub.ExecContext(w.ctx, q, bit); err != nil {
			return fmt.Errorf("index the words of changed services: %w", err)
		}
		if err := w.ftsHashSize(table, defaultHashSize); err != nil {
			return err
		}
	}
	if _, err := w.pub.ExecContext(w.ctx, "DROP TABLE temp.bulk_words"); err != nil {
		return fmt.Errorf("drop the table of words to index: %w", err)
	}
	w.wordsKept = false
	return nil
}

// ftsHashSize sets the size of the in-memory hash of a full-text index.
func (w *writeTx) ftsHashSize(table string, size int) error {
	q := fmt.Sprintf("INSERT INTO %s (%s, rank) VALUES ('hashsize', %d)", table, table, size)
	if _, err := w.pub.ExecContext(w.ctx, q); err != nil {
		return fmt.Errorf("set the hash size of %s: %w", table, err)
	}
	return nil
}

// allSearchDocs makes every service's search documents anew, from one read of the views of every
// site, role and service: those searchAhead made, or else made now, a batch of services at a time on
// every CPU (decoding views and encoding documents is most of the work), each batch stored while the
// next is made.
func (w *writeTx) allSearchDocs() error {
	clear := []string{"DELETE FROM search_docs", "DELETE FROM search_gone"}
	for _, a := range dirsvc.ServedAudiences {
		bit := audienceBit(a)
		clear = append(clear, fmt.Sprintf("INSERT INTO search_text_%d (search_text_%d) VALUES ('delete-all')", bit, bit))
	}
	for _, q := range clear {
		if _, err := w.pub.ExecContext(w.ctx, q); err != nil {
			return fmt.Errorf("clear the search documents: %w", err)
		}
	}
	if a := w.ahead; a != nil {
		w.ahead = nil
		<-a.done
		if a.err != nil {
			return fmt.Errorf("make the search documents: %w", a.err)
		}
		for i, b := range a.batches {
			if err := w.storeDocBatch(b, a.docs[i]); err != nil {
				return err
			}
			a.docs[i] = nil
		}
		return nil
	}
	sites, roles, err := w.sitesAndRoles()
	if err != nil {
		return err
	}
	workers := runtime.GOMAXPROCS(0)
	c, err := newDocContext(sites, roles, workers)
	if err != nil {
		return err
	}
	type made struct {
		batch []serviceViews
		docs  [][]docRow
		err   error
	}
	var making chan made // the batch whose documents are being made, if any
	store := func() error {
		if making == nil {
			return nil
		}
		m := <-making
		making = nil
		if m.err != nil {
			return m.err
		}
		return w.storeDocBatch(m.batch, m.docs)
	}
	err = w.eachServiceBatch(func(b []serviceViews) error {
		if err := store(); err != nil {
			return err
		}
		ch := make(chan made, 1) // never blocks: a failed write need not wait for it
		making = ch
		go func() {
			docs, err := c.docsOf(b, workers)
			ch <- made{b, docs, err}
		}()
		return nil
	})
	if err != nil {
		if making != nil {
			<-making // the documents being made are not wanted; they only read what the write holds
		}
		return fmt.Errorf("make the search documents: %w", err)
	}
	return store()
}

// searchAhead begins making every service's search documents, when the write's search step is to
// make them all anew, from the views the write has stored so far. It reads the views now and makes
// the documents on a goroutine, beside the steps that come before the search step (the indexes of a
// bulk write, the narrowing keys, the feed), which write on one core and change nothing a document is
// made of: they may give a view another head (feedwrite.go's moveViews), and a document holds none
// of its head. The goroutine leaves a core to the writer.
func (w *writeTx) searchAhead() error {
	if whole, err := w.wholeSearch(); err != nil || !whole {
		return err
	}
	sites, roles, err := w.sitesAndRoles()
	if err != nil {
		return err
	}
	a := &docsAhead{done: make(chan struct{})}
	if err := w.eachServiceBatch(func(b []serviceViews) error { a.batches = append(a.batches, b); return nil }); err != nil {
		return fmt.Errorf("make the search documents: %w", err)
	}
	a.docs = make([][][]docRow, len(a.batches))
	workers := max(1, runtime.GOMAXPROCS(0)-1)
	go func() {
		defer close(a.done)
		c, err := newDocContext(sites, roles, workers)
		sites, roles = nil, nil // decoded: their bodies are no longer needed
		for i, b := range a.batches {
			if err != nil {
				break
			}
			if a.stop.Load() {
				err = errors.New("the write ended")
				break
			}
			a.docs[i], err = c.docsOf(b, workers)
			for j := range b {
				b[j].rows = nil // only the IDs are stored from here on
			}
		}
		a.err = err
	}()
	w.ahead = a
	return nil
}

// docsAhead are the search documents searchAhead makes: docs[i] those of the services of batches[i],
// once done is closed (err set if they could not all be made). Setting stop ends the making early.
type docsAhead struct {
	batches [][]serviceViews
	docs    [][][]docRow
	err     error
	done    chan struct{}
	stop    atomic.Bool
}

// keyedView is a stored view under the key a whole refresh finds it by: a site's ID; a role's service.
type keyedView struct {
	key  string
	view storedView
}

// serviceViews are the stored views of a service.
type serviceViews struct {
	id   string
	rows []storedView
}

// sitesAndRoles reads the views of every site and of every role of a service, in public-ID order.
func (w *writeTx) sitesAndRoles() (sites, roles []keyedView, err error) {
	loc := kindRange("public_id", dirsvc.KindLocation)
	if sites, err = w.keyedViews("SELECT public_id, audiences, body FROM projections WHERE "+loc.sql, loc.args); err != nil {
		return nil, nil, fmt.Errorf("read the sites: %w", err)
	}
	roles, err = w.keyedViews(`
SELECT r.service_id, p.audiences, p.body FROM records r JOIN projections p ON p.public_id = r.public_id
WHERE r.kind = 'role' AND r.service_id IS NOT NULL ORDER BY r.public_id`, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("read the roles: %w", err)
	}
	return sites, roles, nil
}

// keyedViews reads the rows (key, audiences, body) query gives.
func (w *writeTx) keyedViews(query string, args []any) ([]keyedView, error) {
	var out []keyedView
	err := w.eachRow(w.pub, query, args, func(s scanner) error {
		var r keyedView
		err := s.Scan(&r.key, &r.view.audiences, &r.view.body)
		out = append(out, r)
		return err
	})
	return out, err
}

// eachServiceBatch reads the views of every service, in public-ID order (each service's rows come
// together), and hands them to fn docsPerBatch services at a time.
func (w *writeTx) eachServiceBatch(fn func([]serviceViews) error) error {
	var batch []serviceViews
	svc := kindRange("public_id", dirsvc.KindService)
	err := w.eachRow(w.pub, "SELECT public_id, audiences, body FROM projections WHERE "+svc.sql+" ORDER BY public_id", svc.args, func(s scanner) error {
		var id string
		var v storedView
		if err := s.Scan(&id, &v.audiences, &v.body); err != nil {
			return err
		}
		if n := len(batch); n == 0 || batch[n-1].id != id {
			if n >= docsPerBatch {
				if err := fn(batch); err != nil {
					return err
				}
				batch = nil
			}
			batch = append(batch, serviceViews{id: id})
		}
		last := &batch[len(batch)-1]
		last.rows = append(last.rows, v)
		return nil
	})
	if err == nil && len(batch) > 0 {
		err = fn(batch)
	}
	return err
}

// docContext is what a whole refresh makes every service's documents with besides the service's own
// views: each audience's views of every site, and of every service's roles.
type docContext struct {
	sites map[string]map[int64]*dirsvc.LocationView
	roles map[string]map[int64][]*dirsvc.RoleView
}

// newDocContext decodes the views sitesAndRoles read, on workers goroutines.
func newDocContext(siteRows, roleRows []keyedView, workers int) (*docContext, error) {
	siteViews, err := decodeOn(workers, siteRows, func(r keyedView) (map[int64]*dirsvc.LocationView, error) {
		return viewsByBit[dirsvc.LocationView]([]storedView{r.view})
	})
	if err != nil {
		return nil, fmt.Errorf("read the sites: %w", err)
	}
	roleViews, err := decodeOn(workers, roleRows, func(r keyedView) (map[int64]*dirsvc.RoleView, error) {
		return viewsByBit[dirsvc.RoleView]([]storedView{r.view})
	})
	if err != nil {
		return nil, fmt.Errorf("read the roles: %w", err)
	}
	c := &docContext{sites: map[string]map[int64]*dirsvc.LocationView{}, roles: map[string]map[int64][]*dirsvc.RoleView{}}
	for i, r := range siteRows {
		if c.sites[r.key] == nil {
			c.sites[r.key] = map[int64]*dirsvc.LocationView{}
		}
		for bit, l := range siteViews[i] {
			c.sites[r.key][bit] = l
		}
	}
	for i, r := range roleRows { // in the roles' order, as a service's own refresh reads them
		if c.roles[r.key] == nil {
			c.roles[r.key] = map[int64][]*dirsvc.RoleView{}
		}
		for bit, v := range roleViews[i] {
			c.roles[r.key][bit] = append(c.roles[r.key][bit], v)
		}
	}
	return c, nil
}

// docsOf makes the documents of a batch of services, on workers goroutines: docs[i] those of
// batch[i] (none for a service no audience sees).
func (c *docContext) docsOf(batch []serviceViews, workers int) ([][]docRow, error) {
	return decodeOn(workers, batch, func(b serviceViews) ([]docRow, error) {
		sv, err := viewsByBit[dirsvc.ServiceView](b.rows)
		if err != nil || len(sv) == 0 {
			return nil, err
		}
		return serviceDocs(sv, c.sites[siteOfViews(sv)], c.roles[b.id])
	})
}

// storeDocBatch stores the documents of a batch of services (docs[i] those of batch[i]) and keeps
// their words for the full-text indexes (keepWords).
func (w *writeTx) storeDocBatch(batch []serviceViews, docs [][]docRow) error {
	ids := make([]string, len(batch))
	for i, b := range batch {
		ids[i] = b.id
	}
	if err := w.storeSearchDocsOf(ids, docs); err != nil {
		return err
	}
	return w.keepWords()
}

// docsPerBatch is how many services' documents a whole refresh makes at a time.
const docsPerBatch = 2048

// decodeAll applies decode to every item on every CPU, and returns the results in the items' order;
// the first error (in that order) if any.
func decodeAll[T, R any](items []T, decode func(T) (R, error)) ([]R, error) {
	return decodeOn(runtime.GOMAXPROCS(0), items, decode)
}

// decodeOn is decodeAll on workers goroutines.
func decodeOn[T, R any](workers int, items []T, decode func(T) (R, error)) ([]R, error) {
	out := make([]R, len(items))
	errs := make([]error, len(items))
	var wg sync.WaitGroup
	var next atomic.Int64
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(items); i = int(next.Add(1) - 1) {
				out[i], errs[i] = decode(items[i])
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}
