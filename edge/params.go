package edge

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/dirsvc/dirsvc"
)

// Every read endpoint under /v1/d/{dir} names the query parameters it accepts, and reads its query
// through readQuery: a parameter it does not accept, a single-valued one given more than once, or
// a value that is not valid answers 400 naming the parameter. The specification names no parameter
// every endpoint must tolerate, so none is ignored: a misspelt filter (services?q=) is refused
// rather than silently widening the answer.

// param is a query parameter an endpoint accepts.
type param struct {
	name string
	// list marks a list filter, which may be repeated and comma-separated; every other parameter
	// is given at most once.
	list bool
}

// The query parameters of the read endpoints (section 4.3 of the specification).
var (
	viewParam         = param{name: "view"}
	cursorParam       = param{name: "cursor"}
	limitParam        = param{name: "limit"}
	updatedSinceParam = param{name: "updatedSince"}
	areaParam         = param{name: "area", list: true}
	typeParam         = param{name: "type", list: true}
	categoryParam     = param{name: "category", list: true}
	organisationParam = param{name: "organisation", list: true}
	systemParam       = param{name: "system"}
	valueParam        = param{name: "value"}
)

// maxParamName bounds how much of an unknown parameter's name a problem repeats.
const maxParamName = 40

// query is a request's query string, checked against the parameters its endpoint accepts.
type query url.Values

// readQuery parses the request's query string and checks it against the parameters the endpoint
// accepts. A pair that is not valid form encoding, a parameter the endpoint does not accept, and a
// single-valued parameter given more than once are each a 400 naming the parameter; the pairs are
// checked in the order given, so the first offending one is named.
func readQuery(r *http.Request, accepts ...param) (query, error) {
	q := query{}
	for pair := range strings.SplitSeq(r.URL.RawQuery, "&") {
		if pair == "" {
			continue
		}
		rawName, rawValue, _ := strings.Cut(pair, "=")
		name, err := url.QueryUnescape(rawName)
		if err != nil || strings.Contains(rawName, ";") {
			return nil, dirsvc.InvalidParam(ClipName(rawName), "%.40q is not a query parameter in form encoding", rawName)
		}
		value, err := url.QueryUnescape(rawValue)
		if err != nil || strings.Contains(rawValue, ";") {
			return nil, dirsvc.InvalidParam(ClipName(name), "the value of %.40s is not in form encoding", name)
		}
		i := slices.IndexFunc(accepts, func(p param) bool { return p.name == name })
		switch {
		case i < 0:
			return nil, unknownParam(name, accepts)
		case !accepts[i].list && len(q[name]) > 0:
			return nil, dirsvc.InvalidParam(name, "%s may be given once", name)
		}
		q[name] = append(q[name], value)
	}
	return q, nil
}

// unknownParam is the answer to a parameter the endpoint does not accept; it names those it does.
func unknownParam(name string, accepts []param) error {
	if name == "" {
		return dirsvc.InvalidParam("", "the query holds a value without a parameter name")
	}
	if len(accepts) == 0 {
		return dirsvc.InvalidParam(ClipName(name), "%.40s is not a parameter of this endpoint, which takes none", name)
	}
	names := make([]string, len(accepts))
	for i, p := range accepts {
		names[i] = p.name
	}
	return dirsvc.InvalidParam(ClipName(name), "%.40s is not a parameter of this endpoint, which takes %s", name, strings.Join(names, ", "))
}

// ClipName shortens a name a client sent to what a problem repeats of it (valid UTF-8 kept).
func ClipName(name string) string {
	if len(name) > maxParamName {
		return strings.ToValidUTF8(name[:maxParamName], "")
	}
	return name
}

// get returns the value of a single-valued parameter and whether it was given. A parameter given
// with an empty value is given: each reader decides whether the empty value is valid.
func (q query) get(name string) (string, bool) {
	vs := q[name]
	if len(vs) == 0 {
		return "", false
	}
	return vs[0], true
}

// oneOf returns the value of a single-valued parameter that takes one of the values allowed, or ""
// when it was not given; any other value is a 400 naming it.
func (q query) oneOf(name string, allowed ...string) (string, error) {
	v, ok := q.get(name)
	if ok && !slices.Contains(allowed, v) {
		return "", dirsvc.InvalidParam(name, "%s must be %s", name, strings.Join(allowed, " or "))
	}
	return v, nil
}

// limit returns the page size: def when not given, else plain decimal digits (no sign, no space)
// from 1 to max; anything else is a 400 naming limit.
func (q query) limit(def, max int) (int, error) {
	v, ok := q.get("limit")
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || strings.Trim(v, "0123456789") != "" || n < 1 || n > max {
		return 0, dirsvc.InvalidParam("limit", "limit must be an integer from 1 to %d, in digits only", max)
	}
	return n, nil
}

// offset returns how many results to skip: 0 when not given, else plain decimal digits up to max;
// anything else is a 400 naming offset.
func (q query) offset(max int) (int, error) {
	v, ok := q.get("offset")
	if !ok {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || strings.Trim(v, "0123456789") != "" || n > max {
		return 0, dirsvc.InvalidParam("offset", "offset must be an integer from 0 to %d, in digits only", max)
	}
	return n, nil
}

// list returns the values of a list filter, given repeated or comma-separated, each checked by
// valid; a bad or empty value, or too many, is a 400 naming the parameter.
func (q query) list(name string, valid func(string) bool) ([]string, error) {
	var out []string
	for _, v := range q[name] {
		for part := range strings.SplitSeq(v, ",") {
			part = strings.TrimSpace(part)
			if !valid(part) {
				return nil, dirsvc.InvalidParam(name, "%s holds a value that is not valid: %.40q", name, part)
			}
			out = append(out, part)
		}
	}
	if len(out) > maxFilterValues {
		return nil, dirsvc.InvalidParam(name, "%s takes at most %d values", name, maxFilterValues)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// recordView returns whether a record read answers with the brief view: the route's default, or the
// view the query names. A kind with one representation (a role) takes no parameter at all.
func recordView(r *http.Request, rt recordRoute) (brief bool, err error) {
	if rt.page == nil {
		_, err := readQuery(r)
		return rt.briefDefault, err
	}
	q, err := readQuery(r, viewParam)
	if err != nil {
		return false, err
	}
	switch view, err := q.oneOf("view", "brief", "page"); {
	case err != nil:
		return false, err
	case view == "":
		return rt.briefDefault, nil
	default:
		return view == "brief", nil
	}
}
