package dirsvc

import (
	"context"
	"net/url"
)

// Browsing a directory: its categories with the services a caller finds in each, and its collections
// (section 2.4 of the specification).

// Filters a category's type names: search with type=<code> for a platform type, category=<code> for
// a directory's local type.
const (
	FilterType     = "type"
	FilterCategory = "category"
)

// BrowseCategory is a category as listed to a caller: its types and how many services the caller
// finds in it (at its tier, inside its narrowing).
type BrowseCategory struct {
	Code  string         `json:"code"`
	Name  string         `json:"name"`
	Icon  string         `json:"icon"`
	Types []CategoryType `json:"types"`
	Count int            `json:"count"`
}

// CategoryType is a type of a category: a platform type (filter type) or a local type the caller
// may see (filter category, with its slug).
type CategoryType struct {
	Code   string `json:"code"`
	Slug   string `json:"slug,omitempty"`
	Label  string `json:"label"`
	Icon   string `json:"icon"`
	Filter string `json:"filter"`
}

// CategoryDetail is one category with the places where the caller finds most of its services.
type CategoryDetail struct {
	BrowseCategory
	Places []PlaceCount `json:"places"`
}

// PlaceCount is an area and how many of a category's services the caller finds located in it.
type PlaceCount struct {
	Area  string `json:"area"`
	Name  string `json:"name,omitempty"`
	Count int    `json:"count"`
}

// MaxPlaces is how many places a category's detail names.
const MaxPlaces = 10

// PlaceAreaTypes are the area types a category's places are counted at, in order of preference:
// local government areas (Australia), territorial authorities (New Zealand), else postcodes. One
// level is used for a category, so no service counts twice.
var PlaceAreaTypes = []string{"lga", "ta", "postcode"}

// BrowseCategories returns the categories of a taxonomy as an audience sees it (ProjectTaxonomy),
// each with its platform types and the local types the audience may see, counts not yet filled.
func BrowseCategories(t *TaxonomyView) []BrowseCategory {
	out := make([]BrowseCategory, 0, len(t.Categories))
	for _, c := range t.Categories {
		bc := BrowseCategory{Code: c.Code, Name: c.Name, Icon: iconOr(c.Icon), Types: []CategoryType{}}
		for _, code := range c.Types {
			ct := CategoryType{Code: code, Label: code, Icon: DefaultIcon, Filter: FilterType}
			for _, pt := range t.PlatformTypes {
				if pt.Code == code {
					ct.Label, ct.Icon = pt.Label, iconOr(pt.Icon)
				}
			}
			bc.Types = append(bc.Types, ct)
		}
		for _, code := range c.LocalTypes {
			for _, lt := range t.LocalTypes {
				if lt.Code == code {
					bc.Types = append(bc.Types, CategoryType{Code: code, Slug: lt.Slug, Label: lt.Label,
						Icon: iconOr(lt.Icon), Filter: FilterCategory})
				}
			}
		}
		out = append(out, bc)
	}
	return out
}

func iconOr(icon string) string {
	if icon == "" {
		return DefaultIcon
	}
	return icon
}

// CategoryServices are what a category finds, as a service's list keys: the services of its platform
// types, and those tagged with its local types the caller may see. A category made of local types
// thus finds exactly the services tagged with them, whatever their platform type; one of platform
// types finds what searching each of its types finds (for a category whose code is the platform
// category of its types, as in the demo directories, what the service list's category filter
// finds).
type CategoryServices struct {
	Code       string
	Types      []string // platform type codes
	LocalTypes []string // local type codes the caller may see
}

// ServicesOf returns what the category c, as an audience sees it, finds.
func ServicesOf(c CategoryView) CategoryServices {
	return CategoryServices{Code: c.Code, Types: c.Types, LocalTypes: c.LocalTypes}
}

// Browser is the browsing side of a directory reader: category counts and places, and collections.
// Counts are of services the viewer finds: visible to its tier and inside its narrowing.
type Browser interface {
	// CountServices returns, for each category, how many services the viewer finds in it.
	CountServices(ctx context.Context, v Viewer, cats []CategoryServices) ([]int, error)
	// Places returns the areas where the viewer finds most of a category's services, most first, at
	// most MaxPlaces, at the first of PlaceAreaTypes its services lie in.
	Places(ctx context.Context, v Viewer, c CategoryServices) ([]PlaceCount, error)
	// Collections returns the collections published for audience a, in the directory's order,
	// whatever their dates.
	Collections(ctx context.Context, a Audience) ([]CollectionView, error)
}

// CollectionView is a collection as published for the audiences that may see it
// (ProjectCollection): drafts and collections that ended are never published; its dates are kept,
// as whether it shows depends on the day it is read.
type CollectionView struct {
	Slug        string   `json:"slug"`
	Title       string   `json:"title"`
	Description string   `json:"description,omitempty"`
	Home        bool     `json:"home,omitempty"`
	StartDate   string   `json:"startDate,omitempty"`
	EndDate     string   `json:"endDate,omitempty"`
	Search      string   `json:"search,omitempty"`
	Services    []string `json:"services,omitempty"`
}

// Current reports whether the collection shows on the date today (YYYY-MM-DD in the directory's
// time zone, see Today): on and after its start date, up to and including its end date.
func (c *CollectionView) Current(today string) bool {
	return (c.StartDate == "" || c.StartDate <= today) && currentOn(c.EndDate, today)
}

// ProjectCollection returns the collection as audience a sees it, published on the date today
// (YYYY-MM-DD in the directory's time zone); nil for a draft, a collection for other audiences, or
// one that ended before today, which never shows again. A collection that starts later is
// published, so that every copy shows it from its start date without publishing again.
func ProjectCollection(c *Collection, a Audience, today string) *CollectionView {
	if c.Draft || !c.VisibleTo.Has(a) || !currentOn(c.EndDate, today) {
		return nil
	}
	return &CollectionView{Slug: c.Slug, Title: c.Title, Description: c.Description, Home: c.Home,
		StartDate: c.StartDate, EndDate: c.EndDate, Search: c.Search, Services: c.Services}
}

// CollectionSummary is an item of the collection list.
type CollectionSummary struct {
	Slug        string `json:"slug"`
	Title       string `json:"title"`
	Description string `json:"description,omitempty"`
	Home        bool   `json:"home"`
}

// Summary returns the collection's item in the collection list.
func (c *CollectionView) Summary() CollectionSummary {
	return CollectionSummary{Slug: c.Slug, Title: c.Title, Description: c.Description, Home: c.Home}
}

// CollectionDetail is a collection with its picked services as result cards at the caller's tier
// (those it does not see left out) and its saved search, which finds the rest.
type CollectionDetail struct {
	CollectionSummary
	Search   *SavedSearch `json:"search"` // null when the collection saves none
	Services []ResultCard `json:"services"`
}

// SavedSearch is a collection's saved search: its query string and the search path that runs it.
type SavedSearch struct {
	Query string `json:"query"`
	Path  string `json:"path"`
}

// SavedSearchOf returns the saved search of a collection of the directory slug, or nil when it
// saves none.
func SavedSearchOf(slug, query string) *SavedSearch {
	if query == "" {
		return nil
	}
	return &SavedSearch{Query: query, Path: "/v1/d/" + url.PathEscape(slug) + "/search/services?" + query}
}
