package edge

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/dirsvc/dirsvc"
)

// Request bodies of the write routes (the admin API, forwarded items, moderation, access requests,
// webhooks, exports): each is read here, by one rule. Its media type is JSON, application/json or
// a structured type application/*+json (application/fhir+json at the FHIR kick-off), with no
// charset or charset=utf-8; another answers 415 (unread, where the route needs a body). It is at
// most the route's bound; a longer one answers 413. Its JSON is read by dirsvc.DecodeJSON: one value, no member twice at any depth,
// every text by the text rule, no member the route does not take, each fault named by its path.
// The token endpoint (form or JSON, with OAuth error bodies) and the nearest-locality read (whose
// answers never repeat what the body held) read their own.

// ReadJSON reads the request's JSON body (see above) into v, reading at most max bytes.
func ReadJSON(w http.ResponseWriter, r *http.Request, max int64, v any) error {
	b, err := ReadBody(w, r, max)
	if err != nil {
		return err
	}
	return dirsvc.DecodeJSON(b, v)
}

// ReadOptionalJSON is ReadJSON for a route whose body may be left out: an empty body, whatever its
// media type, leaves v as it was and reports false.
func ReadOptionalJSON(w http.ResponseWriter, r *http.Request, max int64, v any) (bool, error) {
	b, err := readCapped(w, r, max)
	if err != nil || len(bytes.TrimSpace(b)) == 0 {
		return false, err
	}
	if err := CheckJSONMediaType(r); err != nil {
		return false, err
	}
	return true, dirsvc.DecodeJSON(b, v)
}

// ReadBody reads the request's body of a JSON media type, at most max bytes, for a route that reads
// the JSON itself (with dirsvc.DecodeJSON or dirsvc.CheckJSON). Its errors answer 415 and 413.
func ReadBody(w http.ResponseWriter, r *http.Request, max int64) ([]byte, error) {
	if err := CheckJSONMediaType(r); err != nil {
		return nil, err
	}
	return readCapped(w, r, max)
}

// CheckJSONMediaType refuses (415) a request whose Content-Type is not JSON: application/json or
// application/*+json, its charset (when given) UTF-8.
func CheckJSONMediaType(r *http.Request) error {
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	isJSON := err == nil && (mt == "application/json" || strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))
	if cs, ok := params["charset"]; isJSON && ok && !strings.EqualFold(cs, "utf-8") {
		isJSON = false
	}
	if !isJSON {
		return &dirsvc.Error{Code: dirsvc.EUnsupportedMedia, Param: "Content-Type",
			Message: "Send the body as JSON: Content-Type application/json (in UTF-8)."}
	}
	return nil
}

// readCapped reads the body, refusing (413) one longer than max bytes.
func readCapped(w http.ResponseWriter, r *http.Request, max int64) ([]byte, error) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	if errors.As(err, new(*http.MaxBytesError)) {
		return nil, dirsvc.Errorf(dirsvc.ETooLarge, "The body is larger than %d bytes.", max)
	} else if err != nil {
		return nil, dirsvc.InvalidParam("body", "The body could not be read.").With(err)
	}
	return b, nil
}
