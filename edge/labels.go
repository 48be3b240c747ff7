package edge

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/dirsvc/dirsvc"
)

// Labels in the reader's language. Views are stored in the directory's language; an answer that
// carries platform labels (types, categories, programs, target groups, referral sources, ownership
// types, open status) is rewritten, code by code, into the language the request's Accept-Language
// negotiates among those the platform ships (dirsvc.Languages), and says which in Content-Language
// with Vary: Accept-Language. An answer in the directory's language is sent as stored, with its own
// entity tag and kept coded forms; one in another language gets the tag and coded forms of its own
// bytes and language, so no cache or conditional request gives one language's answer to another.

var (
	keyAcceptLanguage  = http.CanonicalHeaderKey("Accept-Language")
	keyContentLanguage = http.CanonicalHeaderKey("Content-Language")
	varyAPILanguage    = []string{varyAPI[0] + ", Accept-Language"}
	contentLanguages   = languageHeaders()
)

// maxLanguageRanges bounds the ranges of an Accept-Language header that are read; those past it are
// ignored.
const maxLanguageRanges = 32

// languageHeaders returns the Content-Language value of every shipped language, by its tag.
func languageHeaders() map[string][]string {
	out := map[string][]string{}
	for _, tag := range dirsvc.Languages() {
		out[tag] = []string{tag}
	}
	return out
}

// negotiateLanguage returns the shipped language an Accept-Language header (RFC 9110 section
// 12.5.4) prefers: of its ranges that match, the one of the highest weight, the first among equals,
// each looked up as RFC 4647 section 3.4 does (en-AU-x-foo, then en-AU, then en); "*" matches the
// directory's language dirLang, and so does a header of which no range matches. Malformed ranges are
// ignored. It reads the header in one pass without allocating, since every read asks it.
func negotiateLanguage(header []string, dirLang string) string {
	best, bestQ, n := dirLang, 0.0, 0
	for _, h := range header {
		for part := range strings.SplitSeq(h, ",") {
			if n++; n > maxLanguageRanges {
				return best
			}
			tag, params, _ := strings.Cut(part, ";")
			tag = strings.TrimSpace(tag)
			q := 1.0
			if params = strings.TrimSpace(params); params != "" {
				v, ok := strings.CutPrefix(params, "q=")
				if !ok {
					v, ok = strings.CutPrefix(params, "Q=")
				}
				var err error
				if q, err = strconv.ParseFloat(strings.TrimSpace(v), 64); !ok || err != nil || q < 0 || q > 1 {
					continue
				}
			}
			if q <= bestQ || tag == "" {
				continue
			}
			if lang := lookupLanguage(tag, dirLang); lang != "" {
				best, bestQ = lang, q
			}
		}
	}
	return best
}

// lookupLanguage returns the shipped language a language range names, as RFC 4647 section 3.4 looks
// it up: the range, then the range with its last subtag cut off, and so on (a singleton goes with
// the subtag after it); "*" is the directory's language dirLang; "" when none is shipped.
func lookupLanguage(tag, dirLang string) string {
	if tag == "*" {
		return dirLang
	}
	for tag != "" {
		if l := dirsvc.LabelsOf(tag); l != nil {
			return l.Language
		}
		i := strings.LastIndexByte(tag, '-')
		if i < 0 {
			break
		}
		tag = tag[:i]
		if j := strings.LastIndexByte(tag, '-'); j >= 0 && j == len(tag)-2 {
			tag = tag[:j]
		}
	}
	return ""
}

// varyLanguage adds Accept-Language to the Vary of h.
func varyLanguage(h http.Header) {
	v := h[keyVary]
	switch {
	case len(v) == 1 && v[0] == varyAPI[0]:
		h[keyVary] = varyAPILanguage
	case !strings.Contains(strings.Join(v, ","), "Accept-Language"):
		h.Add(keyVary, "Accept-Language")
	}
}

// localise returns a body carrying platform labels, made for audience a, its entity tag and its
// coded forms in the language the request negotiates, and sets Content-Language and Vary. In the
// directory's language it returns them as they are.
func (s *Server) localise(w http.ResponseWriter, r *http.Request, a dirsvc.Audience, body []byte, etag string, f forms) ([]byte, string, forms, error) {
	lang := negotiateLanguage(r.Header[keyAcceptLanguage], dirsvc.DirectoryLanguage)
	h := w.Header()
	h[keyContentLanguage] = contentLanguages[lang]
	varyLanguage(h)
	if lang == dirsvc.DirectoryLanguage {
		return body, etag, f, nil
	}
	tr, err := s.translator(r, a, dirsvc.LabelsOf(lang))
	if err != nil {
		return nil, "", nil, err
	}
	out, err := tr.rewrite(body)
	if err != nil {
		return nil, "", nil, err
	}
	sum := sha256.Sum256(out)
	return out, dirsvc.ETagOfSum(sha256.Sum256(append(sum[:], lang...))), s.bodies.forms(sum), nil
}

// writeLabelled is writeJSON for a body that carries platform labels.
func (s *Server) writeLabelled(w http.ResponseWriter, r *http.Request, a dirsvc.Audience, body []byte) {
	etag, f := s.composed(body)
	body, etag, f, err := s.localise(w, r, a, body, etag, f)
	if err != nil {
		s.error(w, r, err)
		return
	}
	setAudience(w, a)
	s.cacheFor(w, r)
	writeTagged(w, r, body, etag, f)
}

// translator rewrites the labels of a body of one directory from the directory's language to
// another.
type translator struct {
	from, to *dirsvc.Labels
	// types are the codes of the platform types the audience's taxonomy lists, by their labels: a
	// service card names its type by label alone.
	types map[string]string
}

// translator returns the translator of the request's directory into the language to, for a body
// made for audience a: the platform types of the services a body for a shows are those a's taxonomy
// lists (the public's lacks those only services hidden from the public use).
func (s *Server) translator(r *http.Request, a dirsvc.Audience, to *dirsvc.Labels) (*translator, error) {
	dir, _, err := s.directory(r.Context(), r.PathValue("dir"))
	if err != nil {
		return nil, err
	}
	p, err := dir.Taxonomy(r.Context(), a)
	if err != nil {
		return nil, err
	}
	var tax dirsvc.TaxonomyView
	if err := json.Unmarshal(p.Body, &tax); err != nil {
		return nil, err
	}
	tr := &translator{from: dirsvc.LabelsOf(dirsvc.DirectoryLanguage), to: to, types: map[string]string{}}
	for _, pt := range tax.PlatformTypes {
		tr.types[pt.Label] = pt.Code
	}
	return tr, nil
}

// rewrite returns body (one JSON value, perhaps followed by white space) with its labels in the
// translator's language, and every other byte of meaning as it was.
func (t *translator) rewrite(body []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	v, err := readJSON(dec)
	if err != nil {
		return nil, err
	}
	t.walk("", v)
	var b bytes.Buffer
	b.Grow(len(body) + len(body)/4)
	if err := v.write(&b); err != nil {
		return nil, err
	}
	b.Write(body[dec.InputOffset():])
	return b.Bytes(), nil
}

// walk rewrites the labels of v, the value of the member named key (the array's, for its items).
func (t *translator) walk(key string, v *jsonValue) {
	switch v.delim {
	case '[':
		for _, item := range v.vals {
			t.walk(key, item)
		}
	case '{':
		t.object(key, v)
		for i, k := range v.keys {
			t.walk(k, v.vals[i])
		}
	}
}

// object rewrites the labels of an object, the value of the member named key, that are its own
// members, before its members' objects are rewritten.
func (t *translator) object(key string, o *jsonValue) {
	switch key {
	case "type", "platformTypes":
		t.relabel(o, "label", dirsvc.LabelTypes)
	case "types": // a category's types: platform types, and local types (filter category) left as they are
		if f, _ := o.get("filter").text(); f == "" || f == dirsvc.FilterType {
			t.relabel(o, "label", dirsvc.LabelTypes)
		}
	case "programs":
		t.relabel(o, "label", dirsvc.LabelPrograms)
		t.relabel(o, "name", dirsvc.LabelPrograms)
	case "targetGroups":
		t.relabel(o, "label", dirsvc.LabelTargetGroups)
		t.relabel(o, "name", dirsvc.LabelTargetGroups)
	case "ownershipType":
		t.relabel(o, "display", dirsvc.LabelOwnership)
	case "ownership":
		t.relabel(o, "label", dirsvc.LabelOwnership)
	case "openStatus":
		if d, ok := o.get("detail").text(); ok {
			if s, ok := t.from.TranslateOpenDetail(d, t.to); ok {
				o.get("detail").setText(s)
			}
		}
	}
	if key == "categories" || o.get("types").is('[') && o.get("name") != nil {
		t.relabel(o, "name", dirsvc.LabelCategories) // a category, listed or alone
	}
	t.typeDisplays(o)
	if l := o.get("referralRequiredFromLabels"); l.is('[') {
		for _, item := range l.vals {
			text, _ := item.text()
			code := cmp.Or(t.from.CodeOf(dirsvc.LabelReferralSources, text), text)
			if s, ok := t.to.Label(dirsvc.LabelReferralSources, code); ok {
				item.setText(s)
			}
		}
	}
	// A suggestion or an offering that finds a platform type.
	if search, ok := o.get("search").text(); ok && o.get("label") != nil {
		if code, ok := strings.CutPrefix(search, "type="); ok {
			if code, err := url.QueryUnescape(code); err == nil {
				if s, ok := t.to.Label(dirsvc.LabelTypes, code); ok {
					o.get("label").setText(s)
				}
			}
		}
	}
}

// typeDisplays rewrites the platform type of a service as a view, a card or a result card shows it:
// platformTypeDisplay, and typeDisplay unless it shows a local type.
func (t *translator) typeDisplays(o *jsonValue) {
	pd, td := o.get("platformTypeDisplay"), o.get("typeDisplay")
	if pd == nil && td == nil {
		return
	}
	var code, platform string
	if ty := o.get("type"); ty.is('{') {
		code, _ = ty.get("code").text()
		platform, _ = ty.get("label").text()
	} else if platform, _ = pd.text(); platform == "" {
		platform, _ = td.text()
	}
	if code == "" {
		code = t.types[platform]
	}
	s, ok := t.to.Label(dirsvc.LabelTypes, code)
	if !ok {
		return
	}
	if pd != nil {
		pd.setText(s)
	}
	shown, _ := td.text()
	local, _ := o.get("localType").get("label").text()
	if td != nil && shown == platform && shown != local {
		td.setText(s)
	}
}

// relabel sets the member textKey of o to the label, in the translator's language, of the code in
// o's member code, where o has both and the language labels the code.
func (t *translator) relabel(o *jsonValue, textKey, family string) {
	code, ok := o.get("code").text()
	text := o.get(textKey)
	if !ok || text == nil {
		return
	}
	if s, ok := t.to.Label(family, code); ok {
		text.setText(s)
	}
}

// jsonValue is a JSON value read whole, its objects' members in order.
type jsonValue struct {
	delim byte // '{' or '[', or 0 for a scalar
	keys  []string
	vals  []*jsonValue // an object's members' values, or an array's items
	tok   json.Token   // a scalar: string, json.Number, bool or nil
}

func readJSON(dec *json.Decoder) (*jsonValue, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return &jsonValue{tok: tok}, nil
	}
	v := &jsonValue{delim: byte(d)}
	for dec.More() {
		if v.delim == '{' {
			k, err := dec.Token()
			if err != nil {
				return nil, err
			}
			v.keys = append(v.keys, k.(string))
		}
		item, err := readJSON(dec)
		if err != nil {
			return nil, err
		}
		v.vals = append(v.vals, item)
	}
	_, err = dec.Token() // the closing delimiter
	return v, err
}

func (v *jsonValue) write(b *bytes.Buffer) error {
	switch v.delim {
	case '{', '[':
		b.WriteByte(v.delim)
		for i, item := range v.vals {
			if i > 0 {
				b.WriteByte(',')
			}
			if v.delim == '{' {
				k, _ := json.Marshal(v.keys[i])
				b.Write(k)
				b.WriteByte(':')
			}
			if err := item.write(b); err != nil {
				return err
			}
		}
		b.WriteByte(v.delim + 2) // '}' or ']'
		return nil
	}
	if n, ok := v.tok.(json.Number); ok {
		b.WriteString(string(n))
		return nil
	}
	e, err := json.Marshal(v.tok)
	b.Write(e)
	return err
}

// get returns the value of o's member named key, or nil when o is no object or has none (get on nil
// is nil).
func (v *jsonValue) get(key string) *jsonValue {
	if v == nil || v.delim != '{' {
		return nil
	}
	if i := slices.Index(v.keys, key); i >= 0 {
		return v.vals[i]
	}
	return nil
}

// is reports whether v is an object ('{') or an array ('['); false when v is nil.
func (v *jsonValue) is(delim byte) bool { return v != nil && v.delim == delim }

// text returns the string v holds, and false when v is no string.
func (v *jsonValue) text() (string, bool) {
	if v == nil {
		return "", false
	}
	s, ok := v.tok.(string)
	return s, ok
}

func (v *jsonValue) setText(s string) { v.tok = s }
