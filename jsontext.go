package dirsvc

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// How the service reads the JSON it is given: a request body, a line of an import file, a record
// mirrored from another directory. One value; no member given twice at any depth; every member
// name and every string by the text rule, each named by its path (contacts[0].value,
// reporter.name), as the rest of the service names fields.

// maxJSONDepth bounds how deeply a JSON value nests: nothing the service takes nests a tenth as
// deep, and a walk of a deeper one would only cost.
const maxJSONDepth = 200

// errNotJSON is CheckJSON's answer to bytes that are not one JSON value.
var errNotJSON = errors.New("not one JSON value")

// CheckJSON checks that raw is one JSON value whose objects give no member twice, at any depth
// (names that differ only in case count as one: encoding/json reads them into one field), and whose
// member names and strings all keep the text rule (CheckText), strings of free-text members
// (MultiLineField) as free text. Its error names the member at fault by its path; bytes that are
// not one JSON value answer an invalid-parameter error naming the body.
func CheckJSON(raw []byte) error {
	return walkJSON(raw, true)
}

// CheckJSONText is CheckJSON without the check of repeated members, for JSON a strict decoder has
// already read (one that refuses a member given twice). Most JSON holds nothing the rule could
// refuse, and is passed on one look at its bytes.
func CheckJSONText(raw []byte) error {
	if plainJSON(raw) {
		return nil
	}
	return walkJSON(raw, false)
}

// DecodeJSON reads a JSON request body into v by the one rule for the bodies the service takes:
// CRLF line breaks in strings read as line feeds (NormaliseJSONLineBreaks), then CheckJSON with null
// refused wherever it stands, then v decoded with members v does not have refused. No body the
// service takes has a member that may be null: decoded, a null would read as the member left out
// (every format, no change, an empty text), never as what its client meant. Every error is an
// invalid-parameter error naming the member at fault (its path), or the body; the decoder's own
// error is its cause.
func DecodeJSON(raw []byte, v any) error {
	raw = NormaliseJSONLineBreaks(raw)
	if err := (&jsonWalk{b: raw, dups: true, noNull: true}).walk(); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		return nil
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return InvalidParam(ClipField(te.Field), "This member has the wrong JSON type.").With(err)
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		name, _ = strconv.Unquote(name)
		return InvalidParam(ClipField(name), "This request takes no member of this name.").With(err)
	}
	return InvalidParam("body", "The body is not the JSON value this request takes.").With(err)
}

// NormaliseJSONLineBreaks returns raw with every CRLF line break inside its strings (the escapes
// \r\n, or \u000d\u000a) written as a line feed alone; raw itself when it holds none. Only escapes
// are looked at: a backslash appears in JSON only inside a string, where it begins an escape.
func NormaliseJSONLineBreaks(raw []byte) []byte {
	if !bytes.Contains(raw, []byte(`\r`)) && !bytes.Contains(raw, []byte(`\u000`)) {
		return raw
	}
	var out []byte // nil until a CR is dropped
	done := 0      // raw[:done] is in out
	for i := 0; i < len(raw); {
		if raw[i] != '\\' {
			i++
			continue
		}
		r, n := escapeAt(raw, i)
		if r == '\r' {
			if next, _ := escapeAt(raw, i+n); next == '\n' {
				out = append(out, raw[done:i]...)
				done = i + n
			}
		}
		i += n
	}
	if out == nil {
		return raw
	}
	return append(out, raw[done:]...)
}

// escapeAt reads the escape at raw[i] (a backslash): the rune it stands for (-1 when it is not a
// whole escape, or not at a backslash) and its length.
func escapeAt(raw []byte, i int) (rune, int) {
	if i+1 >= len(raw) || raw[i] != '\\' {
		return -1, 1
	}
	switch c := raw[i+1]; c {
	case 'n':
		return '\n', 2
	case 'r':
		return '\r', 2
	case 't':
		return '\t', 2
	case 'b':
		return '\b', 2
	case 'f':
		return '\f', 2
	case 'u':
		if i+6 > len(raw) {
			return -1, 2
		}
		v, err := strconv.ParseUint(string(raw[i+2:i+6]), 16, 16)
		if err != nil {
			return -1, 2
		}
		return rune(v), 6
	default:
		return rune(c), 2
	}
}

// plainJSON reports, at a look at its bytes, that JSON holds nothing the text rule could refuse:
// only printable ASCII and UTF-8 outside the refused ranges, and no escape of a control character
// (tab and line feed included: whether they are allowed depends on the member). JSON that is not
// plain may still keep the rule; walkJSON decides.
func plainJSON(raw []byte) bool {
	for i := 0; i < len(raw); {
		c := raw[i]
		switch {
		case c == '\\':
			r, n := escapeAt(raw, i)
			if r < 0x20 || refusedRune(r) != "" {
				return false
			}
			i += n
		case c >= 0x20 && c < 0x7f || c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c < utf8.RuneSelf:
			return false
		default:
			r, n := utf8.DecodeRune(raw[i:])
			if r == utf8.RuneError && n == 1 || refusedRune(r) != "" {
				return false
			}
			i += n
		}
	}
	return true
}

// jsonWalk walks one JSON value, keeping the path of the value it is at.
type jsonWalk struct {
	b      []byte
	i      int
	dups   bool   // check repeated members
	noNull bool   // refuse null (DecodeJSON)
	path   []byte // the path of the current value
	depth  int
}

// walkJSON walks raw by CheckJSON's rules (dups: with the check of repeated members).
func walkJSON(raw []byte, dups bool) error {
	return (&jsonWalk{b: raw, dups: dups}).walk()
}

// walk walks the one JSON value w.b holds.
func (w *jsonWalk) walk() error {
	w.space()
	err := w.value("")
	if err == nil {
		if w.space(); w.i != len(w.b) {
			err = errNotJSON
		}
	}
	if errors.Is(err, errNotJSON) {
		return InvalidParam("body", "The body is not one JSON value.")
	}
	return err
}

func (w *jsonWalk) space() {
	for w.i < len(w.b) {
		switch w.b[w.i] {
		case ' ', '\t', '\n', '\r':
			w.i++
		default:
			return
		}
	}
}

// value walks the value at w.i, the value of the member named member (an array's elements are their
// array's member's).
func (w *jsonWalk) value(member string) error {
	if w.i >= len(w.b) {
		return errNotJSON
	}
	switch c := w.b[w.i]; {
	case c == '{' || c == '[':
		if w.depth++; w.depth > maxJSONDepth {
			return InvalidParam(ClipField(string(w.path)), "The JSON nests deeper than %d levels.", maxJSONDepth)
		}
		defer func() { w.depth-- }()
		if c == '{' {
			return w.object()
		}
		return w.array(member)
	case c == '"':
		_, err := w.str(member, false)
		return err
	case c == 't':
		return w.literal("true")
	case c == 'f':
		return w.literal("false")
	case c == 'n':
		if err := w.literal("null"); err != nil || !w.noNull {
			return err
		}
		if len(w.path) == 0 {
			return InvalidParam("body", "The body is null: send the JSON object this request takes.")
		}
		return InvalidParam(ClipField(string(w.path)), "null is no value of this member: leave the member out instead.")
	case c == '-' || c >= '0' && c <= '9':
		start := w.i
		for w.i < len(w.b) && strings.IndexByte("0123456789+-.eE", w.b[w.i]) >= 0 {
			w.i++
		}
		if w.i == start {
			return errNotJSON
		}
		return nil
	}
	return errNotJSON
}

func (w *jsonWalk) literal(s string) error {
	if !bytes.HasPrefix(w.b[w.i:], []byte(s)) {
		return errNotJSON
	}
	w.i += len(s)
	return nil
}

// object walks an object: each member's name, then its value.
func (w *jsonWalk) object() error {
	w.i++ // {
	// The names given so far: by the name folded, the name as given.
	var names map[string]string
	parent := len(w.path)
	for first := true; ; first = false {
		w.space()
		if w.i < len(w.b) && w.b[w.i] == '}' && first {
			w.i++
			return nil
		}
		name, err := w.str("", true)
		if err != nil {
			return err
		}
		if len(w.path) > 0 {
			w.path = append(w.path, '.')
		}
		w.path = append(w.path, name...)
		if w.dups {
			if names == nil {
				names = map[string]string{}
			}
			if err := w.repeated(names, name); err != nil {
				return err
			}
		}
		if w.space(); w.i >= len(w.b) || w.b[w.i] != ':' {
			return errNotJSON
		}
		w.i++
		w.space()
		if err := w.value(name); err != nil {
			return err
		}
		w.path = w.path[:parent]
		if w.space(); w.i >= len(w.b) {
			return errNotJSON
		}
		switch w.b[w.i] {
		case ',':
			w.i++
		case '}':
			w.i++
			return nil
		default:
			return errNotJSON
		}
	}
}

// repeated refuses a member name given before in the same object (at w.path), and notes it in
// names (a map, so that an object of many members costs one look-up each).
func (w *jsonWalk) repeated(names map[string]string, name string) error {
	folded := strings.ToLower(name)
	switch before, ok := names[folded]; {
	case ok && before == name:
		return InvalidParam(ClipField(string(w.path)), "This member is given more than once.")
	case ok:
		return InvalidParam(ClipField(string(w.path)), "This member is given more than once (names that differ only in case are one member).")
	}
	names[folded] = name
	return nil
}

// array walks an array, naming its elements member[0], member[1]...
func (w *jsonWalk) array(member string) error {
	w.i++ // [
	parent := len(w.path)
	for n := 0; ; n++ {
		w.space()
		if w.i < len(w.b) && w.b[w.i] == ']' && n == 0 {
			w.i++
			return nil
		}
		w.path = append(w.path, '[')
		w.path = strconv.AppendInt(w.path, int64(n), 10)
		w.path = append(w.path, ']')
		if err := w.value(member); err != nil {
			return err
		}
		w.path = w.path[:parent]
		if w.space(); w.i >= len(w.b) {
			return errNotJSON
		}
		switch w.b[w.i] {
		case ',':
			w.i++
		case ']':
			w.i++
			return nil
		default:
			return errNotJSON
		}
	}
}

// str walks the string at w.i, checking it by the text rule: a member name (isName) as one line,
// named by the object's path; a value as the text of member, named by w.path. It returns the
// string's text when it is a member name.
func (w *jsonWalk) str(member string, isName bool) (string, error) {
	if w.i >= len(w.b) || w.b[w.i] != '"' {
		return "", errNotJSON
	}
	start := w.i
	w.i++
	escaped := false
	multi := -1 // unknown until a tab or line feed asks
	for {
		if w.i >= len(w.b) {
			return "", errNotJSON
		}
		c := w.b[w.i]
		var r rune
		switch {
		case c == '"':
			w.i++
			if !isName {
				return "", nil
			}
			if !escaped {
				return string(w.b[start+1 : w.i-1]), nil
			}
			var s string
			if err := json.Unmarshal(w.b[start:w.i], &s); err != nil {
				return "", errNotJSON
			}
			return s, nil
		case c == '\\':
			escaped = true
			var n int
			if r, n = escapeAt(w.b, w.i); r < 0 {
				return "", errNotJSON
			}
			w.i += n
			if utf16.IsSurrogate(r) {
				continue // a surrogate pair is a rune past U+FFFF, a lone one reads as U+FFFD: neither is refused
			}
		case c < 0x20:
			return "", errNotJSON
		case c < utf8.RuneSelf:
			w.i++
			if c != 0x7f {
				continue
			}
			r = rune(c)
		default:
			var n int
			r, n = utf8.DecodeRune(w.b[w.i:])
			if r == utf8.RuneError && n == 1 {
				return "", w.fault(isName, msgNotUTF8)
			}
			w.i += n
		}
		if err := w.checkRune(r, member, isName, &multi); err != nil {
			return "", err
		}
	}
}

// checkRune checks a rune of a string by the text rule: tab and line feed only in a value of a
// free-text member (multi caches whether it is one: -1 unknown, 0 no, 1 yes).
func (w *jsonWalk) checkRune(r rune, member string, isName bool, multi *int) error {
	if r != '\t' && r != '\n' {
		if msg := refusedRune(r); msg != "" {
			return w.fault(isName, msg)
		}
		return nil
	}
	if *multi < 0 {
		*multi = 0
		if !isName && multiLineMember(member) {
			*multi = 1
		}
	}
	if *multi == 0 {
		return w.fault(isName, msgOneLine)
	}
	return nil
}

// fault is the error of a string that breaks the text rule: named by its path, or for a member's
// name by its object's path (the name itself is not repeated).
func (w *jsonWalk) fault(isName bool, msg string) error {
	if isName {
		at := string(w.path)
		if at == "" {
			at = "body"
		}
		return InvalidParam(ClipField(at), "A member's name holds a character that no name may hold.")
	}
	return textError(string(w.path), msg)
}
