package blevebench

import (
	"context"
	"fmt"
	"strings"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/custom"
	"github.com/blevesearch/bleve/v2/analysis/char/asciifolding"
	"github.com/blevesearch/bleve/v2/analysis/token/apostrophe"
	"github.com/blevesearch/bleve/v2/analysis/token/lowercase"
	"github.com/blevesearch/bleve/v2/analysis/tokenizer/unicode"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/index/scorch/mergeplan"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search/query"
	index "github.com/blevesearch/bleve_index_api"
)

// textField is a full-text field of the Bleve documents with its weight, as the project weighs its
// full-text columns in its ranking.
type textField struct {
	name   string
	weight float64
}

// textFields are the full-text fields, in the order and with the weights of the project's columns.
var textFields = []textField{
	{"name", 10}, {"specialties", 6}, {"organisation", 4}, {"place", 3}, {"practitioners", 4}, {"description", 1},
}

// facetFields are the keyword fields counted as facets, in the order of dirsvc.SearchFacets.
var facetFields = []string{"type", "category", "ownership", "localTypes", "cost", "delivery", "language",
	"targetGroup", "program"}

// maxFacetValues is how many values of each facet both searches list.
const maxFacetValues = 50

// wordsAnalyzer splits words as the project's full-text index does (unicode61 with diacritics
// removed): Unicode word boundaries, folded to ASCII, cut at an apostrophe (unicode61 splits
// "women's" into "women" and "s") and lower-cased, with neither stop words nor stemming.
const wordsAnalyzer = "words"

// indexMapping returns the mapping of the Bleve documents: the full-text fields, keyword fields for
// the filters and facets, and a geopoint for the position. Relevance is BM25, as the project's.
func indexMapping() (*mapping.IndexMappingImpl, error) {
	im := bleve.NewIndexMapping()
	im.ScoringModel = index.BM25Scoring
	err := im.AddCustomAnalyzer(wordsAnalyzer, map[string]any{
		"type":          custom.Name,
		"char_filters":  []string{asciifolding.Name},
		"tokenizer":     unicode.Name,
		"token_filters": []string{apostrophe.Name, lowercase.Name},
	})
	if err != nil {
		return nil, err
	}
	im.DefaultAnalyzer = wordsAnalyzer
	dm := bleve.NewDocumentStaticMapping()
	for _, f := range textFields {
		fm := bleve.NewTextFieldMapping()
		fm.Analyzer, fm.Store, fm.IncludeInAll, fm.DocValues = wordsAnalyzer, false, false, false
		dm.AddFieldMappingsAt(f.name, fm)
	}
	for _, f := range append(facetFields, "appointment", "selfReferral") {
		fm := bleve.NewKeywordFieldMapping()
		fm.Store, fm.IncludeInAll = false, false
		dm.AddFieldMappingsAt(f, fm)
	}
	geo := bleve.NewGeoPointFieldMapping()
	geo.Store, geo.IncludeInAll = false, false
	dm.AddFieldMappingsAt("point", geo)
	im.DefaultMapping = dm
	return im, nil
}

// bleveDoc returns the Bleve document of a service.
func bleveDoc(s *service) map[string]any {
	doc := map[string]any{}
	put := func(field string, v any) {
		switch v := v.(type) {
		case string:
			if v == "" {
				return
			}
		case []string:
			if len(v) == 0 {
				return
			}
		}
		doc[field] = v
	}
	put("name", s.name)
	put("specialties", s.specialties)
	put("organisation", s.organisation)
	put("place", s.place)
	put("practitioners", s.practitioners)
	put("description", s.description)
	put("type", s.typ)
	put("category", s.category)
	put("ownership", s.ownership)
	put("localTypes", s.localTypes)
	put("cost", s.cost)
	put("delivery", s.delivery)
	put("language", s.languages)
	put("targetGroup", s.groups)
	put("program", s.programs)
	put("appointment", s.appointment)
	if s.selfReferral {
		put("selfReferral", "yes")
	}
	if s.point != nil {
		doc["point"] = map[string]any{"lat": s.point.Lat, "lon": s.point.Lon}
	}
	return doc
}

// bleveSearch is the Bleve side of the benchmark: the index, and what an application keeps beside
// it in memory, as the project keeps its search documents: each service's organisation, hours and
// areas, by service ID.
type bleveSearch struct {
	idx   bleve.Index
	side  map[string]*service
	count int // documents in the index
}

// indexBatch is how many documents each Bleve batch holds.
const indexBatch = 1000

// newBleveSearch indexes the services in a new Bleve index (scorch, on disk at path) and merges it
// into one segment, so that the searches meet the index in its best shape.
func newBleveSearch(ctx context.Context, path string, services []*service) (*bleveSearch, error) {
	im, err := indexMapping()
	if err != nil {
		return nil, err
	}
	idx, err := bleve.New(path, im)
	if err != nil {
		return nil, err
	}
	s := &bleveSearch{idx: idx, side: make(map[string]*service, len(services))}
	batch := idx.NewBatch()
	for _, svc := range services {
		s.side[svc.id] = svc
		if err := batch.Index(svc.id, bleveDoc(svc)); err != nil {
			idx.Close()
			return nil, err
		}
		if batch.Size() >= indexBatch {
			if err := idx.Batch(batch); err != nil {
				idx.Close()
				return nil, err
			}
			batch.Reset()
		}
	}
	if err := idx.Batch(batch); err != nil {
		idx.Close()
		return nil, err
	}
	adv, err := idx.Advanced()
	if err != nil {
		idx.Close()
		return nil, err
	}
	if sc, ok := adv.(*scorch.Scorch); ok {
		if err := sc.ForceMerge(ctx, &mergeplan.SingleSegmentMergePlanOptions); err != nil {
			idx.Close()
			return nil, fmt.Errorf("merge the index: %w", err)
		}
	}
	n, err := idx.DocCount()
	if err != nil {
		idx.Close()
		return nil, err
	}
	s.count = int(n)
	return s, nil
}

// wordQuery returns the query of one word on every full-text field, each with its weight: the word
// as a term (a hyphenated or dotted word as the phrase of its parts), the last word of a search as
// the start of a word, as the project reads a word being typed; with fuzzy, a word also matches
// the terms one letter away from it.
func wordQuery(parts []string, last, fuzzy bool) query.Query {
	var qs []query.Query
	word := strings.Join(parts, " ")
	for _, f := range textFields {
		switch {
		case len(parts) > 1:
			q := bleve.NewMatchPhraseQuery(word)
			q.SetField(f.name)
			q.SetBoost(f.weight)
			qs = append(qs, q)
		case fuzzy:
			q := bleve.NewFuzzyQuery(word)
			q.SetFuzziness(1)
			q.SetField(f.name)
			q.SetBoost(f.weight)
			qs = append(qs, q)
			if last {
				p := bleve.NewPrefixQuery(word)
				p.SetField(f.name)
				p.SetBoost(f.weight)
				qs = append(qs, p)
			}
		case last:
			q := bleve.NewPrefixQuery(word)
			q.SetField(f.name)
			q.SetBoost(f.weight)
			qs = append(qs, q)
		default:
			q := bleve.NewTermQuery(word)
			q.SetField(f.name)
			q.SetBoost(f.weight)
			qs = append(qs, q)
		}
	}
	return bleve.NewDisjunctionQuery(qs...)
}

// textQuery returns the query of a search's words: every word required, on any field.
func textQuery(text string, fuzzy bool) query.Query {
	ws := queryWords(text)
	if len(ws) == 0 {
		return bleve.NewMatchAllQuery()
	}
	qs := make([]query.Query, len(ws))
	for i, w := range ws {
		qs[i] = wordQuery(w, i == len(ws)-1, fuzzy)
	}
	return bleve.NewConjunctionQuery(qs...)
}

// term returns a query for a keyword field's value.
func term(field, value string) query.Query {
	q := bleve.NewTermQuery(value)
	q.SetField(field)
	return q
}

// filterQueries returns the queries of a filter set's values, each list any of its values.
func filterQueries(f filterSet) []query.Query {
	var qs []query.Query
	anyOf := func(field string, values []string) {
		if len(values) == 0 {
			return
		}
		var d []query.Query
		for _, v := range values {
			d = append(d, term(field, v))
		}
		qs = append(qs, bleve.NewDisjunctionQuery(d...))
	}
	anyOf("cost", f.costs)
	anyOf("delivery", f.delivery)
	anyOf("language", f.languages)
	if f.appointment != "" {
		qs = append(qs, term("appointment", f.appointment))
	}
	if f.selfReferral {
		qs = append(qs, term("selfReferral", "yes"))
	}
	return qs
}

// request returns a search request for q with size hits, and with the facets when asked.
func request(q query.Query, size int, facets bool) *bleve.SearchRequest {
	req := bleve.NewSearchRequestOptions(q, size, 0, false)
	if facets {
		for _, f := range facetFields {
			req.AddFacet(f, bleve.NewFacetRequest(f, maxFacetValues))
		}
	}
	return req
}

// search answers a benchmark query with Bleve: the total, the first page by relevance and the
// facets of the whole match set, as the project's search answers it.
func (s *bleveSearch) search(ctx context.Context, q benchQuery) (outcome, error) {
	text := textQuery(q.words, q.class == classTypo)
	switch {
	case q.open:
		return s.searchOpen(ctx, text)
	case q.group:
		return s.searchGrouped(ctx, text)
	}
	conj := []query.Query{text}
	if q.near != nil {
		geo := bleve.NewGeoDistanceQuery(q.near.Lon, q.near.Lat, fmt.Sprintf("%gkm", radiusKm))
		geo.SetField("point")
		conj = append(conj, geo)
	}
	conj = append(conj, filterQueries(q.filter)...)
	var top query.Query = text
	if len(conj) > 1 {
		top = bleve.NewConjunctionQuery(conj...)
	}
	res, err := s.idx.SearchInContext(ctx, request(top, pageSize, true))
	if err != nil {
		return outcome{}, err
	}
	return outcomeOf(res), nil
}

// searchOpen answers a search for services open now. Bleve cannot call the project's hours
// function inside a query, and whether hours are open depends on the instant and the site's time
// zone and holidays, so it cannot be indexed ahead either. The fair equivalent is a post-filter on
// the same hours with the same function: every text match is fetched (unscored), the open ones are
// kept, and the page and facets are then asked of Bleve for those services only (their IDs).
func (s *bleveSearch) searchOpen(ctx context.Context, text query.Query) (outcome, error) {
	req := request(text, s.count, false)
	req.Score = bleve.ScoreNone
	res, err := s.idx.SearchInContext(ctx, req)
	if err != nil {
		return outcome{}, err
	}
	var open []string
	for _, h := range res.Hits {
		if svc := s.side[h.ID]; svc != nil && openNow(svc.hours, svc.areas) {
			open = append(open, h.ID)
		}
	}
	if len(open) == 0 {
		return outcome{}, nil
	}
	res, err = s.idx.SearchInContext(ctx, request(bleve.NewConjunctionQuery(text, bleve.NewDocIDQuery(open)), pageSize, true))
	if err != nil {
		return outcome{}, err
	}
	return outcomeOf(res), nil
}

// searchGrouped answers a search by organisation as the project does: every match in the order of
// relevance with the facets, then the organisations in the order of their best service, the page's
// organisations and their services (at most maxGroupedHits). Each hit's organisation comes from
// the application's memory beside the index (loading it from Bleve's stored fields costs more).
func (s *bleveSearch) searchGrouped(ctx context.Context, text query.Query) (outcome, error) {
	res, err := s.idx.SearchInContext(ctx, request(text, s.count, true))
	if err != nil {
		return outcome{}, err
	}
	out := outcome{services: int(res.Total), facets: facetCount(res)}
	at := map[string]int{}
	var orgs []string
	for _, h := range res.Hits {
		org := s.side[h.ID].orgID
		if _, ok := at[org]; !ok {
			at[org] = len(orgs)
			orgs = append(orgs, org)
		}
	}
	out.total = len(orgs)
	for _, h := range res.Hits {
		if at[s.side[h.ID].orgID] < pageSize && len(out.page) < maxGroupedHits {
			out.page = append(out.page, h.ID)
		}
	}
	return out, nil
}

// outcomeOf returns what a Bleve answer found.
func outcomeOf(res *bleve.SearchResult) outcome {
	out := outcome{total: int(res.Total), services: int(res.Total), facets: facetCount(res)}
	for _, h := range res.Hits {
		out.page = append(out.page, h.ID)
	}
	return out
}

// facetCount returns how many facet values a Bleve answer lists.
func facetCount(res *bleve.SearchResult) int {
	n := 0
	for _, f := range res.Facets {
		n += len(f.Terms.Terms())
	}
	return n
}
