package dirsvc_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc"
)

// slotRE finds the slots of a label ({time}, {day}).
var slotRE = regexp.MustCompile(`\{[a-z]+\}`)

// TestEveryShippedLanguageLabelsEveryCode checks each shipped language against English, the
// reference: the same codes in every family, none with an empty text, the same slots in each text.
func TestEveryShippedLanguageLabelsEveryCode(t *testing.T) {
	en := dirsvc.LabelsOf(dirsvc.DirectoryLanguage)
	if got := dirsvc.Languages(); !slices.Contains(got, dirsvc.DirectoryLanguage) || !slices.Contains(got, dirsvc.PseudoLanguage) {
		t.Fatalf("Languages()=%v, want %s and %s among them", got, dirsvc.DirectoryLanguage, dirsvc.PseudoLanguage)
	}
	for _, lang := range dirsvc.Languages() {
		l := dirsvc.LabelsOf(lang)
		if l == nil || l.Language != lang {
			t.Fatalf("LabelsOf(%q)=%v", lang, l)
		}
		for _, family := range dirsvc.LabelFamilies {
			if got, want := l.Codes(family), en.Codes(family); !slices.Equal(got, want) || len(want) == 0 {
				t.Errorf("%s labels %s %v, want %v", lang, family, got, want)
			}
			for _, code := range en.Codes(family) {
				text, ok := l.Label(family, code)
				ref, _ := en.Label(family, code)
				if !ok || strings.TrimSpace(text) == "" {
					t.Errorf("%s has no label of %s %s", lang, family, code)
				}
				if got, want := slotRE.FindAllString(text, -1), slotRE.FindAllString(ref, -1); !slices.Equal(got, want) {
					t.Errorf("%s %s %s %q has slots %v, want %v", lang, family, code, text, got, want)
				}
			}
		}
	}
	if l := dirsvc.LabelsOf("EN-xa"); l == nil || l.Language != dirsvc.PseudoLanguage {
		t.Errorf("a tag is found whatever its case: %v", l)
	}
	if l := dirsvc.LabelsOf("xx"); l != nil {
		t.Errorf("an unknown language has labels: %v", l)
	}
}

// TestThePseudoLocaleRewritesEveryLabel checks that each pseudo-locale text is English's accented,
// lengthened and bracketed, so that a label left in English stands out in an answer.
func TestThePseudoLocaleRewritesEveryLabel(t *testing.T) {
	if got, want := dirsvc.Pseudo("General practice"), "[Ĝéñéŕåļ þŕåçţîçé ······]"; got != want {
		t.Errorf("Pseudo=%q, want %q", got, want)
	}
	if got, want := dirsvc.Pseudo("Opens {day} at {time}"), "[Öþéñš {day} åţ {time} ·······]"; got != want {
		t.Errorf("Pseudo=%q, want %q", got, want)
	}
	en, xa := dirsvc.LabelsOf(dirsvc.DirectoryLanguage), dirsvc.LabelsOf(dirsvc.PseudoLanguage)
	for _, family := range dirsvc.LabelFamilies {
		for _, code := range en.Codes(family) {
			ref, _ := en.Label(family, code)
			if got, _ := xa.Label(family, code); got != dirsvc.Pseudo(ref) || got == ref {
				t.Errorf("%s %s: %q, want %q", family, code, got, dirsvc.Pseudo(ref))
			}
		}
	}
}

// TestOpenStatusWordsTranslate writes the open status of hours at moments that give every detail,
// and translates each detail into the pseudo-locale and back.
func TestOpenStatusWordsTranslate(t *testing.T) {
	mel, err := dirsvc.LoadZone("Australia/Melbourne")
	if err != nil {
		t.Fatal(err)
	}
	weekdays := &dirsvc.OpeningHours{TimeZone: "Australia/Melbourne", Weekly: []dirsvc.WeeklyHours{
		{Day: "mon", Intervals: []dirsvc.Interval{{Open: "09:00", Close: "17:00"}}},
		{Day: "tue", Intervals: []dirsvc.Interval{{Open: "09:00", Close: "17:00"}}},
	}}
	never := func(time.Time) bool { return false }
	monday := time.Date(2026, 11, 23, 0, 0, 0, 0, mel)
	cases := []struct {
		name  string
		hours *dirsvc.OpeningHours
		at    time.Time
		en    string
	}{
		{"hours not listed", nil, monday, "Hours not listed"},
		{"always open", &dirsvc.OpeningHours{Always: true}, monday, "Open 24 hours"},
		{"open now", weekdays, monday.Add(10 * time.Hour), "Open until 17:00"},
		{"opens later today", weekdays, monday.Add(8 * time.Hour), "Opens at 09:00"},
		{"opens tomorrow", weekdays, monday.Add(18 * time.Hour), "Opens tomorrow at 09:00"},
		{"opens on a weekday", weekdays, monday.AddDate(0, 0, 2), "Opens Monday at 09:00"},
		{"closed", &dirsvc.OpeningHours{TimeZone: "Australia/Melbourne"}, monday, "Closed"},
	}
	en, xa := dirsvc.LabelsOf(dirsvc.DirectoryLanguage), dirsvc.LabelsOf(dirsvc.PseudoLanguage)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := dirsvc.StatusAt(c.hours, c.at, never).Detail
			if got != c.en {
				t.Fatalf("StatusAt=%q, want %q", got, c.en)
			}
			pseudo, ok := en.TranslateOpenDetail(got, xa)
			if !ok || !strings.HasPrefix(pseudo, "[") || strings.Contains(pseudo, "{") {
				t.Fatalf("in %s: %q %v", dirsvc.PseudoLanguage, pseudo, ok)
			}
			if back, ok := xa.TranslateOpenDetail(pseudo, en); !ok || back != got {
				t.Errorf("back in English: %q %v, want %q", back, ok, got)
			}
		})
	}
	if got, ok := en.TranslateOpenDetail("Opens someday at 09:00", xa); ok {
		t.Errorf("a detail not written from the words translates to %q", got)
	}
}
