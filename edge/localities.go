package edge

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"mime"
	"net/http"
	"strconv"

	"github.com/dirsvc/dirsvc"
)

// The nearest-locality read names the place a position is in or near, so that an app can offer
// "services near Ultimo" without the position leaving the device again. The specification says the
// position is neither stored nor logged; that is why the position travels in a body (a query
// string would reach access logs, proxies' logs and Referer headers), why no error ever repeats a
// value of the body, and why every answer is no-store: the place says roughly where the caller is.

// NearestPlace is the answer of the nearest-locality read: the place of the gazetteer nearest to
// the position, of the directory's country.
type NearestPlace struct {
	// Name is the locality's name as written in text (dirsvc.Locality.DisplayName).
	Name     string `json:"name"`
	Postcode string `json:"postcode"`
	// State is the Australian state or territory (NSW) or the New Zealand region (Wellington).
	State   string `json:"state"`
	Country string `json:"country"`
	// Areas are the area IDs the place lies in, most specific first (dirsvc.Locality.Areas), as
	// the area filter of lists and search takes them.
	Areas []string `json:"areas"`
	// DistanceKm is the distance from the position to the place's centre, rounded to
	// NearestRoundingKm, so that with the place's position it tells no more of the position than
	// the place does.
	DistanceKm float64 `json:"distanceKm"`
}

const (
	// MaxNearestKm is how far from the position the nearest place may lie: beyond it, the position
	// is not in or near any place the service knows (at sea, or abroad), and the answer is 404.
	MaxNearestKm = 50
	// NearestRoundingKm is the step DistanceKm is rounded to.
	NearestRoundingKm = 0.1
	// maxNearestBody bounds the body of a nearest-locality request: a position takes under 100
	// bytes. A longer body is refused (413) unread.
	maxNearestBody = 1 << 10
)

// eTooLarge and eUnsupportedMedia are the codes of a request body too large or of a type the
// endpoint does not take.
const (
	eTooLarge         = dirsvc.ETooLarge
	eUnsupportedMedia = dirsvc.EUnsupportedMedia
)

// handleNearestLocality answers POST /v1/d/{dir}/localities/nearest: the place of the directory's
// country nearest to the position in the body, within MaxNearestKm. It is a read, served by every
// node from the embedded gazetteer, never forwarded. It neither stores nor logs the position, and
// no answer repeats it: a field that is wrong is named, never its value.
func (s *Server) handleNearestLocality(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if tokenFrom(r.Context()) != nil {
		w.Header()[keyCacheControl] = privateNoStore
	}
	if r.URL.RawQuery != "" {
		// Not readQuery: its problem repeats the name of a parameter, which here could be a position.
		s.error(w, r, dirsvc.InvalidParam("query", "This endpoint takes no query parameter: send the position in the body."))
		return
	}
	_, dir, err := s.directory(r.Context(), r.PathValue("dir"))
	if err != nil {
		s.error(w, r, err)
		return
	}
	lat, lon, err := readPosition(w, r)
	if err != nil {
		s.error(w, r, err)
		return
	}
	loc, km, ok := dirsvc.NearestLocality(lat, lon)
	if !ok || loc.Country != dir.Country || km > MaxNearestKm {
		s.error(w, r, dirsvc.Errorf(dirsvc.ENotFound, "No place of the directory's country lies within %d km of the position.", MaxNearestKm))
		return
	}
	body, err := json.Marshal(NearestPlace{Name: loc.DisplayName(), Postcode: loc.Postcode, State: loc.State,
		Country: loc.Country, Areas: loc.Areas(), DistanceKm: math.Round(km/NearestRoundingKm) * NearestRoundingKm})
	if err != nil {
		s.error(w, r, err)
		return
	}
	setAudience(w, dirsvc.Public)
	h := w.Header()
	h[keyContentType] = contentTypeJSON
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	w.Write(body)
}

// readPosition reads the body of a nearest-locality request: a JSON object with exactly the
// members latitude (-90 to 90) and longitude (-180 to 180), each a number. Its errors name the
// member or the body, and never hold anything the body held.
func readPosition(w http.ResponseWriter, r *http.Request) (lat, lon float64, err error) {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return 0, 0, &dirsvc.Error{Code: eUnsupportedMedia, Param: "Content-Type",
			Message: "Send the position as application/json."}
	}
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxNearestBody))
	if errors.As(err, new(*http.MaxBytesError)) {
		return 0, 0, dirsvc.Errorf(eTooLarge, "The body is larger than %d bytes: send only latitude and longitude.", maxNearestBody)
	} else if err != nil {
		return 0, 0, dirsvc.InvalidParam("body", "The body could not be read.")
	}
	members, err := positionMembers(raw)
	if err != nil {
		return 0, 0, err
	}
	lat, err = coordinate(members, "latitude", 90)
	if err != nil {
		return 0, 0, err
	}
	lon, err = coordinate(members, "longitude", 180)
	return lat, lon, err
}

// errNotPosition is the answer to a body that is not a JSON object of latitude and longitude.
var errNotPosition = dirsvc.InvalidParam("body", "The body must be a JSON object with the members latitude and longitude, and no other.")

// positionMembers splits the body into the members latitude and longitude, refusing any other
// member, a member given twice, and anything after the object.
func positionMembers(raw []byte) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, errNotPosition
	}
	members := make(map[string]json.RawMessage, 2)
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, errNotPosition
		}
		key, _ := t.(string)
		if key != "latitude" && key != "longitude" {
			return nil, errNotPosition // the unknown member's name is not repeated: it could be a position
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, errNotPosition
		}
		if _, dup := members[key]; dup {
			return nil, dirsvc.InvalidParam(key, "%s is given more than once.", key)
		}
		members[key] = v
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		return nil, errNotPosition
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errNotPosition
	}
	return members, nil
}

// coordinate reads a member that must be a number from -limit to limit.
func coordinate(members map[string]json.RawMessage, name string, limit float64) (float64, error) {
	v, ok := members[name]
	if !ok {
		return 0, dirsvc.InvalidParam(name, "%s is required.", name)
	}
	var n json.Number
	if len(v) == 0 || (v[0] != '-' && (v[0] < '0' || v[0] > '9')) || json.Unmarshal(v, &n) != nil {
		return 0, dirsvc.InvalidParam(name, "%s must be a number.", name)
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || math.Abs(f) > limit {
		return 0, dirsvc.InvalidParam(name, "%s must be a number from %g to %g.", name, -limit, limit)
	}
	return f, nil
}
