package dirsvc

// SearchQuery asks for the services a caller may find (GET search/services): words, a place and
// filters. Each list filter matches any of its values; the filters together must all match.
type SearchQuery struct {
	// Text is the words asked for; empty finds every service the other fields allow.
	Text string
	// Near and RadiusKm keep the services whose site is within RadiusKm of Near (a site whose
	// address the caller may not see has no position, so it is never within a radius); Near alone
	// orders by distance when Sort is SortDistance.
	Near     *Point
	RadiusKm float64
	// Areas keeps services located in one of the areas, whose catchment reaches one, or that serve
	// the whole country.
	Areas []string
	// Categories are directory category codes, local type codes or slugs, or platform category codes.
	Categories                                   []string
	Types, Costs, Delivery, Facilities           []string
	Languages, TargetGroups, Programs, Ownership []string
	Appointment                                  string // required or not_required; empty for either
	SelfReferral                                 bool   // only services people may refer themselves to
	Sort                                         string // SortRelevance (default), SortDistance, SortName
	Limit, Offset                                int
}

// Search orders.
const (
	SortRelevance = "relevance"
	SortDistance  = "distance"
	SortName      = "name"
)

// SearchResult is a page of a search: the services found, how many there are in all, and the
// facets of all of them.
type SearchResult struct {
	Total  int
	Hits   []SearchHit
	Facets SearchFacets
}

// SearchHit is one service found, with its distance from the query's position when both are known.
type SearchHit struct {
	PublicID   string
	DistanceKm *float64
}

// SearchFacets counts the services found by each value of each facet.
type SearchFacets struct {
	Type        []FacetCount `json:"type"`
	Category    []FacetCount `json:"category"`
	Ownership   []FacetCount `json:"ownership"`
	LocalTypes  []FacetCount `json:"localTypes"`
	Cost        []FacetCount `json:"cost"`
	Delivery    []FacetCount `json:"delivery"`
	Language    []FacetCount `json:"language"`
	TargetGroup []FacetCount `json:"targetGroup"`
	Program     []FacetCount `json:"program"`
}

// FacetCount is how many services found have a facet's value.
type FacetCount struct {
	Value string `json:"value"`
	Count int    `json:"count"`
}
