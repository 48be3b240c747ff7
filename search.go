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
	// Areas keeps services that lie in each of the areas (an area filter and a postcode both hold):
	// located in it, whose catchment reaches it, or that serve the whole country; with LocatedOnly,
	// only those located in it.
	Areas       []string
	LocatedOnly bool
	// Categories are directory category codes, local type codes or slugs, or platform category codes.
	Categories                                   []string
	Types, Costs, Delivery, Facilities           []string
	Languages, TargetGroups, Programs, Ownership []string
	Appointment                                  string // required or not_required; empty for either
	SelfReferral                                 bool   // only services people may refer themselves to
	Sort                                         string // SortRelevance (default), SortDistance, SortName
	Limit, Offset                                int
	// Place, when set, is a locality asked for by name with the postcodes the gazetteer gives it:
	// services located in one (or, unless LocatedOnly, whose catchment reaches one) or in a site of
	// that locality the caller sees. A place written in Text is then not looked for.
	Place *PlaceRead
	// Spell corrects a word that no document the caller may see holds to the most common one a
	// letter away that one does; a place written in the words is read as a place either way.
	Spell bool
	// ByOrganisation answers the search as organisations: Limit and Offset count organisations, in
	// the order of their best service, and the hits are the services of the page's organisations.
	ByOrganisation bool
	// Open, when set, keeps the services whose hours it accepts (the areas are the site's, for the
	// public holidays where it is: its answer may depend on their state:<code> area alone); services
	// without hours are never open. OpenKey, when set, names what Open answers (the filter and the
	// minute it is asked at), so that searches with the same key may share its answers.
	Open    func(hours *OpeningHours, areas []string) bool
	OpenKey string
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
	Total  int // services found; organisations found when the search is by organisation
	Hits   []SearchHit
	Facets SearchFacets
	// Reading is how the words were read.
	Reading QueryReading
	// By organisation: the page's organisations, in order, and the services found in all.
	Organisations []SearchOrganisation
	ServiceTotal  int
}

// QueryReading is how a search's words were read: the words searched for, the spelling corrections
// made, and the place found among them.
type QueryReading struct {
	Words       []string     `json:"words"`
	Corrections []Correction `json:"corrections"`
	Place       *PlaceRead   `json:"place"`
}

// Listed returns the reading with its lists empty rather than absent.
func (r QueryReading) Listed() QueryReading {
	if r.Words == nil {
		r.Words = []string{}
	}
	if r.Corrections == nil {
		r.Corrections = []Correction{}
	}
	return r
}

// Correction is a word of a search read as another.
type Correction struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// PlaceRead is a place named in a search's words, and the areas (postcodes) it was read as.
type PlaceRead struct {
	Name  string   `json:"name"`
	Areas []string `json:"areas"`
}

// SearchOrganisation is an organisation of a search answered by organisation, with how many of its
// services were found.
type SearchOrganisation struct {
	PublicID string
	Name     string
	Services int
}

// SearchHit is one service found, with its distance from the query's position when both are known.
type SearchHit struct {
	PublicID     string
	Organisation string
	DistanceKm   *float64
	// Card, when the reader gives it, is the service's result card as the viewer sees it, without
	// distance and open status (shared: copy it to change it); Hours and Areas are the service's
	// hours and areas, for its open status.
	Card *ResultCard
	// CardJSON, when the reader gives it with Card, is Card's CardPrefix (shared: do not change it).
	CardJSON []byte
	Hours    *OpeningHours
	Areas    []string
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

// Listed returns the facets with every facet a list, empty when no service has a value of it.
func (f SearchFacets) Listed() SearchFacets {
	for _, l := range []*[]FacetCount{&f.Type, &f.Category, &f.Ownership, &f.LocalTypes, &f.Cost, &f.Delivery,
		&f.Language, &f.TargetGroup, &f.Program} {
		if *l == nil {
			*l = []FacetCount{}
		}
	}
	return f
}

// FacetCount is how many services found have a facet's value.
type FacetCount struct {
	Value string `json:"value"`
	Count int    `json:"count"`
}

// ResultCard is a service as a search result (section 2.1): what a list of results shows of it, as
// the caller's audience sees it.
type ResultCard struct {
	PublicID            string             `json:"publicId"`
	Slug                string             `json:"slug"`
	Name                string             `json:"name"`
	Organisation        Ref                `json:"organisation"`
	Location            *CardLocation      `json:"location"`
	TypeDisplay         string             `json:"typeDisplay"`
	PlatformTypeDisplay string             `json:"platformTypeDisplay"`
	LocalType           *LocalTypeRef      `json:"localType,omitempty"`
	Specialties         []LocalTypeRef     `json:"specialties,omitempty"`
	CategoryCode        *string            `json:"categoryCode"`
	CategoryIcon        string             `json:"categoryIcon"`
	Ownership           *OwnershipCard     `json:"ownership,omitempty"`
	PractitionerLinks   []PractitionerLink `json:"practitionerLinks"`
	DistanceKm          *float64           `json:"distanceKm,omitempty"`
	OpenStatus          OpenStatus         `json:"openStatus"`
}

// CardLocation is a result card's site: its address lines and point only when the caller may see
// the address.
type CardLocation struct {
	PublicID        string   `json:"publicId"`
	Name            string   `json:"name"`
	Area            string   `json:"area"`
	Address         []string `json:"address"` // display lines, or null when withheld
	AddressWithheld bool     `json:"addressWithheld"`
	Point           *Point   `json:"point"`
}

// PractitionerLink is a practitioner who practises at a service and shows the caller their name.
type PractitionerLink struct {
	PublicID string `json:"publicId"`
	Name     string `json:"name"`
	Title    string `json:"title"`
}

// ResultCardOf returns the result card of a service from the audience's views of it, its site (nil
// when hidden) and its roles.
func ResultCardOf(s *ServiceView, site *LocationView, roles []*RoleView) ResultCard {
	c := ResultCard{PublicID: s.PublicID, Slug: s.Slug, Name: s.Name, Organisation: s.Organisation,
		TypeDisplay: s.TypeDisplay, PlatformTypeDisplay: s.PlatformTypeDisplay, LocalType: s.LocalType,
		Specialties: s.Specialties, CategoryCode: s.CategoryCode, CategoryIcon: s.CategoryIcon,
		Ownership: s.Ownership, PractitionerLinks: []PractitionerLink{}}
	if c.CategoryIcon == "" {
		c.CategoryIcon = DefaultIcon
	}
	if site != nil {
		c.Location = &CardLocation{PublicID: site.PublicID, Name: site.Name, Area: site.Area,
			Address: AddressLines(site.Address), AddressWithheld: site.AddressWithheld, Point: site.Point}
		if site.AddressWithheld {
			c.Location.Address, c.Location.Point = nil, nil
		}
	}
	for _, r := range roles {
		if r.Active && r.Practitioner.Name != "" {
			c.PractitionerLinks = append(c.PractitionerLinks, PractitionerLink{PublicID: r.Practitioner.PublicID,
				Name: r.Practitioner.Name, Title: r.Title})
		}
	}
	return c
}

// Suggestion is an autocomplete suggestion (GET autocomplete): a service type, a place or an
// organisation the caller may find, with how many of the services it finds there are.
type Suggestion struct {
	Kind  string `json:"kind"`  // SuggestType, SuggestPlace or SuggestOrganisation
	Label string `json:"label"` // as shown
	// Search is the search/services query that finds what the suggestion names: type=, category=,
	// postcode= or q=.
	Search   string `json:"search"`
	PublicID string `json:"publicId,omitempty"` // an organisation's
	Services int    `json:"services"`
}

// Suggestion kinds.
const (
	SuggestType         = "type"
	SuggestPlace        = "place"
	SuggestOrganisation = "organisation"
)

// OrganisationQuery asks for the organisations with at least one service the caller may find
// (GET search/organisations): by words of the name, first letter, category or type, and place.
type OrganisationQuery struct {
	Words      string   // each word must start a word of the name
	Letter     string   // the name's first letter, A to Z, or # for any other first character
	Categories []string // as SearchQuery's
	Types      []string
	Areas      []string // a service in each: located in it, whose catchment reaches it, or serving the country
	Limit      int
	Offset     int
}

// OrganisationResult is a page of organisations found, A to Z, their total and their facets.
type OrganisationResult struct {
	Total  int
	Items  []OrganisationFound
	Facets OrganisationFacets
}

// OrganisationFound is an organisation found with what its services found offer: their number,
// their local types (specialties) and platform types (codes, the most common first) and places.
type OrganisationFound struct {
	PublicID   string
	Name       string
	Services   int
	LocalTypes []string
	Types      []string
	Places     []string // "Locality STATE postcode" of its services' sites, the most common first
}

// Listed returns the facets with every facet a list, empty when no organisation has a value of it.
func (f OrganisationFacets) Listed() OrganisationFacets {
	for _, l := range []*[]FacetCount{&f.Letter, &f.Category, &f.Region, &f.Place} {
		if *l == nil {
			*l = []FacetCount{}
		}
	}
	return f
}

// OrganisationFacets count the organisations found by the first letter of their name, and by the
// categories, regions (states) and places (localities) of their services found.
type OrganisationFacets struct {
	Letter   []FacetCount `json:"letter"`
	Category []FacetCount `json:"category"`
	Region   []FacetCount `json:"region"`
	Place    []FacetCount `json:"place"`
}
