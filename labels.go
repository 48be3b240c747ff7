package dirsvc

import (
	"embed"
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"unicode/utf8"
)

// The platform's labels (service types, categories, programs, target groups, referral sources,
// ownership types and the words of open status) in each language the platform ships. Each language is
// one file labels/<tag>.json mapping every code of every family to its text; English is the reference
// every other file must match code for code. Adding a language is adding its file: nothing else
// changes (docs/languages.md).

//go:embed labels/*.json
var labelFiles embed.FS

// DirectoryLanguage is the language a directory's views are stored and served in when the reader
// asks for no other the platform ships. Directories have no language setting yet: every one is
// English.
const DirectoryLanguage = "en"

// PseudoLanguage is the pseudo-locale made from English at start (accented, lengthened and
// bracketed text), which shows at a glance whether a label of an answer went through the labels'
// rewriting.
const PseudoLanguage = "en-XA"

// Label families: the keys of a labels file.
const (
	LabelTypes           = "types"
	LabelCategories      = "categories"
	LabelPrograms        = "programs"
	LabelTargetGroups    = "targetGroups"
	LabelReferralSources = "referralSources"
	LabelOwnership       = "ownership"
	LabelOpenStatus      = "openStatus"
	LabelWeekdays        = "weekdays"
)

// LabelFamilies are every family of labels, each a map of code to text in every labels file.
var LabelFamilies = []string{LabelTypes, LabelCategories, LabelPrograms, LabelTargetGroups,
	LabelReferralSources, LabelOwnership, LabelOpenStatus, LabelWeekdays}

// Open status words: the codes of the family LabelOpenStatus. The texts of OpenUntil, OpensAt and
// OpensTomorrowAt hold {time}; that of OpensOnAt holds {day} and {time}.
const (
	OpenHoursNotListed = "hoursNotListed"
	OpenAllHours       = "open24Hours"
	OpenUntil          = "openUntil"
	OpensAt            = "opensAt"
	OpensTomorrowAt    = "opensTomorrowAt"
	OpensOnAt          = "opensOnAt"
	OpenClosed         = "closed"
)

// Labels are the platform's labels in one language.
type Labels struct {
	Language string // the language tag, as in the file's name
	families map[string]map[string]string
	open     map[string]template // the open status words, cut at their slots
}

// Label returns the text of code in family, and whether this language has one.
func (l *Labels) Label(family, code string) (string, bool) {
	s, ok := l.families[family][code]
	return s, ok
}

// Codes returns the codes of family this language labels, sorted.
func (l *Labels) Codes(family string) []string { return slices.Sorted(maps.Keys(l.families[family])) }

var languages = loadLanguages()

// ReferralSourceLabels are the labels of referral source codes in the directory's language.
var ReferralSourceLabels = LabelsOf(DirectoryLanguage).families[LabelReferralSources]

// directoryLabels are the labels of the directory's language, with which open status is written.
var directoryLabels = LabelsOf(DirectoryLanguage)

// LabelsOf returns the labels of the language tag (compared without regard to case), or nil when the
// platform ships none for it.
func LabelsOf(tag string) *Labels {
	if l, ok := languages[tag]; ok {
		return l
	}
	for _, l := range languages {
		if strings.EqualFold(l.Language, tag) {
			return l
		}
	}
	return nil
}

// Languages returns the tags of every language the platform ships labels for, sorted.
func Languages() []string {
	out := make([]string, 0, len(languages))
	for _, l := range languages {
		out = append(out, l.Language)
	}
	slices.Sort(out)
	return out
}

// loadLanguages reads every labels file and makes the pseudo-locale from English. A malformed file
// is a fault of the build, found by the first test that runs.
func loadLanguages() map[string]*Labels {
	out := map[string]*Labels{}
	names, err := labelFiles.ReadDir("labels")
	if err != nil {
		panic(err)
	}
	for _, n := range names {
		b, err := labelFiles.ReadFile(path.Join("labels", n.Name()))
		if err != nil {
			panic(err)
		}
		l, err := parseLabels(strings.TrimSuffix(n.Name(), ".json"), b)
		if err != nil {
			panic(fmt.Sprintf("labels file %s: %v", n.Name(), err))
		}
		out[l.Language] = l
	}
	en := out[DirectoryLanguage]
	if en == nil {
		panic("labels: no " + DirectoryLanguage + ".json")
	}
	out[PseudoLanguage] = pseudoLabels(en)
	return out
}

// parseLabels reads the labels file of the language tag.
func parseLabels(tag string, b []byte) (*Labels, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, err
	}
	var lang string
	if err := json.Unmarshal(raw["language"], &lang); err != nil || lang != tag {
		return nil, fmt.Errorf("language %q is not the file's name %q", lang, tag)
	}
	l := &Labels{Language: tag, families: map[string]map[string]string{}}
	for _, f := range LabelFamilies {
		var m map[string]string
		if err := json.Unmarshal(raw[f], &m); err != nil || len(m) == 0 {
			return nil, fmt.Errorf("family %s: missing or not a map of code to text", f)
		}
		l.families[f] = m
	}
	return l, l.cutOpen()
}

// cutOpen cuts the open status words at their slots.
func (l *Labels) cutOpen() error {
	l.open = map[string]template{}
	for code, s := range l.families[LabelOpenStatus] {
		t, err := cutTemplate(s)
		if err != nil {
			return fmt.Errorf("openStatus %s: %w", code, err)
		}
		l.open[code] = t
	}
	return nil
}

// pseudoLabels returns en's labels as the pseudo-locale: each text accented, lengthened by about a
// third and bracketed, its slots ({time}, {day}) kept.
func pseudoLabels(en *Labels) *Labels {
	l := &Labels{Language: PseudoLanguage, families: map[string]map[string]string{}}
	for f, m := range en.families {
		out := make(map[string]string, len(m))
		for code, s := range m {
			out[code] = Pseudo(s)
		}
		l.families[f] = out
	}
	if err := l.cutOpen(); err != nil {
		panic(err)
	}
	return l
}

// pseudoLetters are the accented forms of the ASCII letters.
var pseudoLetters = map[rune]rune{
	'a': 'å', 'b': 'ƀ', 'c': 'ç', 'd': 'ð', 'e': 'é', 'f': 'ƒ', 'g': 'ĝ', 'h': 'ĥ', 'i': 'î', 'j': 'ĵ',
	'k': 'ķ', 'l': 'ļ', 'm': 'ɱ', 'n': 'ñ', 'o': 'ö', 'p': 'þ', 'q': 'ǫ', 'r': 'ŕ', 's': 'š', 't': 'ţ',
	'u': 'û', 'v': 'ṽ', 'w': 'ŵ', 'x': 'ẋ', 'y': 'ý', 'z': 'ž',
	'A': 'Å', 'B': 'Ɓ', 'C': 'Ç', 'D': 'Ð', 'E': 'É', 'F': 'Ƒ', 'G': 'Ĝ', 'H': 'Ĥ', 'I': 'Î', 'J': 'Ĵ',
	'K': 'Ķ', 'L': 'Ļ', 'M': 'Ṁ', 'N': 'Ñ', 'O': 'Ö', 'P': 'Þ', 'Q': 'Ǫ', 'R': 'Ŕ', 'S': 'Š', 'T': 'Ţ',
	'U': 'Û', 'V': 'Ṽ', 'W': 'Ŵ', 'X': 'Ẋ', 'Y': 'Ý', 'Z': 'Ž',
}

// Pseudo returns the pseudo-locale form of an English text: "General practice" becomes
// "[Ĝéñéŕåļ þŕåçţîçé ······]". Slots in braces are kept as they are.
func Pseudo(s string) string {
	var b strings.Builder
	b.WriteByte('[')
	slot := false
	for _, r := range s {
		switch {
		case r == '{':
			slot = true
		case r == '}':
			slot = false
		case !slot:
			if p, ok := pseudoLetters[r]; ok {
				r = p
			}
		}
		b.WriteRune(r)
	}
	b.WriteByte(' ')
	b.WriteString(strings.Repeat("·", (utf8.RuneCountInString(s)+2)/3))
	b.WriteByte(']')
	return b.String()
}

// template is a text with slots ({time}, {day}) cut apart: lits[0] slots[0] lits[1] ... lits[n].
type template struct {
	lits  []string
	slots []string
}

// cutTemplate cuts s at its slots; two slots must have text between them.
func cutTemplate(s string) (template, error) {
	var t template
	for {
		i := strings.IndexByte(s, '{')
		if i < 0 {
			t.lits = append(t.lits, s)
			return t, nil
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			return t, fmt.Errorf("%q: a slot is not closed", s)
		}
		if len(t.slots) > 0 && i == 0 {
			return t, fmt.Errorf("%q: two slots with nothing between", s)
		}
		t.lits = append(t.lits, s[:i])
		t.slots = append(t.slots, s[i+1:i+j])
		s = s[i+j+1:]
	}
}

// fill writes the template with the values of its slots.
func (t template) fill(vals map[string]string) string {
	if len(t.slots) == 0 {
		return t.lits[0]
	}
	var b strings.Builder
	for i, lit := range t.lits {
		b.WriteString(lit)
		if i < len(t.slots) {
			b.WriteString(vals[t.slots[i]])
		}
	}
	return b.String()
}

// match reads s as written from the template, and returns the values of its slots.
func (t template) match(s string) (map[string]string, bool) {
	rest, ok := strings.CutPrefix(s, t.lits[0])
	if !ok {
		return nil, false
	}
	vals := map[string]string{}
	for i, slot := range t.slots {
		next := t.lits[i+1]
		var v string
		if i == len(t.slots)-1 {
			if v, ok = strings.CutSuffix(rest, next); !ok {
				return nil, false
			}
			rest = ""
		} else {
			j := strings.Index(rest, next)
			if j < 0 {
				return nil, false
			}
			v, rest = rest[:j], rest[j+len(next):]
		}
		if v == "" {
			return nil, false
		}
		vals[slot] = v
	}
	return vals, rest == ""
}

// openDetail returns the detail of an open status in this language: the words of code with the
// time (HH:MM) and the weekday's code (sunday to saturday) in their slots.
func (l *Labels) openDetail(code, at, weekday string) string {
	t := l.open[code]
	switch len(t.slots) {
	case 0:
		return t.lits[0]
	case 1:
		if t.slots[0] == "time" {
			return t.lits[0] + at + t.lits[1]
		}
	}
	day, _ := l.Label(LabelWeekdays, weekday)
	return t.fill(map[string]string{"time": at, "day": day})
}

// TranslateOpenDetail returns the detail of an open status written in the language of l in the
// language of to, and false when it is none l writes.
func (l *Labels) TranslateOpenDetail(detail string, to *Labels) (string, bool) {
	for code, t := range l.open {
		vals, ok := t.match(detail)
		if !ok {
			continue
		}
		weekday := ""
		if d, ok := vals["day"]; ok {
			if weekday = l.CodeOf(LabelWeekdays, d); weekday == "" {
				continue
			}
		}
		return to.openDetail(code, vals["time"], weekday), true
	}
	return "", false
}

// CodeOf returns the code that family labels with text in this language, or "" when none does.
func (l *Labels) CodeOf(family, text string) string {
	for code, s := range l.families[family] {
		if s == text {
			return code
		}
	}
	return ""
}
