package dirsvc_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/dirsvc/dirsvc"
)

// refusedCharacters are characters the text rule refuses in every text, as Go string literals.
var refusedCharacters = []struct{ name, char string }{
	{"NUL", "\x00"}, {"BEL", "\a"}, {"ESC", "\x1b"}, {"a carriage return alone", "\r"},
	{"DEL", "\x7f"}, {"U+0085 (next line)", "\u0085"}, {"U+009F", "\u009f"},
	{"U+061C (Arabic letter mark)", "\u061c"}, {"U+200E (left-to-right mark)", "\u200e"},
	{"U+202E (right-to-left override)", "\u202e"}, {"U+2066 (left-to-right isolate)", "\u2066"},
	{"U+2069 (pop directional isolate)", "\u2069"}, {"a byte that is not UTF-8", "\xff"},
}

func paramOf(t *testing.T, err error) string {
	t.Helper()
	var e *dirsvc.Error
	if !errors.As(err, &e) || e.Code != dirsvc.EInvalid {
		t.Fatalf("error %v, want an invalid-parameter error", err)
	}
	return e.Param
}

func TestCheckTextRefusesControlsAndNamesTheField(t *testing.T) {
	for _, c := range refusedCharacters {
		for _, field := range []string{"name", "description", "contacts[0].value"} {
			t.Run(c.name+" in "+field, func(t *testing.T) {
				err := dirsvc.CheckText(field, "Harbour "+c.char+"Health")
				if got := paramOf(t, err); got != field {
					t.Fatalf("param %q, want %q", got, field)
				}
				if strings.Contains(err.Error(), "Harbour") {
					t.Fatalf("the error repeats the text: %v", err)
				}
			})
		}
	}
}

func TestCheckTextTakesTabsAndLineBreaksInFreeTextOnly(t *testing.T) {
	for _, c := range []struct {
		name, field, text string
		ok                bool
	}{
		{"a description may hold a tab and a line feed", "description", "Walk-in\tclinic\nBookings by phone", true},
		{"a nested description may too", "changes.description", "One\nTwo", true},
		{"a biography's paragraphs are free text", "leadership[2].bio", "One.\n\nTwo.", true},
		{"a name may not hold a line feed", "name", "Harbour\nHealth", false},
		{"a contact's value may not hold a tab", "contacts[0].value", "02\t9555 0100", false},
		{"a list of names is names", "qualifications[1]", "MBBS\nFRACGP", false},
		{"letters of every script are text", "name", "Te Whatu Ora · Āwhina · 健康 · صحة", true},
		{"a CRLF line break is not (it is read as LF first)", "description", "One\r\nTwo", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := dirsvc.CheckText(c.field, c.text); (err == nil) != c.ok {
				t.Fatalf("CheckText(%q) = %v, want ok %v", c.field, err, c.ok)
			}
		})
	}
	if got := dirsvc.NormaliseLineBreaks("One\r\nTwo\rThree"); got != "One\nTwo\rThree" {
		t.Fatalf("NormaliseLineBreaks = %q", got)
	}
}

// jsonString is s as a JSON string literal, every character outside printable ASCII escaped as
// \uXXXX (as many encoders write it); s holds no character past U+FFFF.
func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		if r < 0x20 || r >= 0x7f || r == '"' || r == '\\' {
			b.WriteString(`\u` + hex4(r))
			continue
		}
		b.WriteRune(r)
	}
	b.WriteByte('"')
	return b.String()
}

func hex4(r rune) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[r>>12&15], digits[r>>8&15], digits[r>>4&15], digits[r&15]})
}

func TestCheckJSONNamesTheMemberByItsPath(t *testing.T) {
	for _, c := range refusedCharacters {
		if c.char == "\xff" {
			continue // not a character: no escape writes it
		}
		t.Run(c.name+", escaped", func(t *testing.T) {
			body := `{"publicId":"svc_a","contacts":[{"kind":"phone","value":"1"},{"kind":"email","label":` + jsonString("Main"+c.char) + `}]}`
			if got := paramOf(t, dirsvc.CheckJSON([]byte(body))); got != "contacts[1].label" {
				t.Fatalf("param %q, want contacts[1].label", got)
			}
		})
		t.Run(c.name+", as it is", func(t *testing.T) {
			raw, _ := json.Marshal(map[string]any{"reporter": map[string]string{"name": "A" + c.char}})
			if c.char == "\r" || c.char < " " {
				return // encoding/json escapes these: the case above covers them
			}
			if got := paramOf(t, dirsvc.CheckJSON(raw)); got != "reporter.name" {
				t.Fatalf("param %q, want reporter.name in %s", got, raw)
			}
		})
	}
	t.Run("bytes that are not UTF-8", func(t *testing.T) {
		if got := paramOf(t, dirsvc.CheckJSON([]byte("{\"message\":\"a\xffb\"}"))); got != "message" {
			t.Fatalf("param %q, want message", got)
		}
	})
}

func TestCheckJSONRefusesAMemberGivenTwice(t *testing.T) {
	for _, c := range []struct{ name, body, param string }{
		{"at the top", `{"message":"a","message":"b"}`, "message"},
		{"in a nested object", `{"reporter":{"name":"a","email":"e","name":"b"}}`, "reporter.name"},
		{"in an object in an array", `{"changes":[{"a":1},{"b":1,"b":2}]}`, "changes[1].b"},
		{"spelt differently, but the same to encoding/json", `{"name":"a","Name":"b"}`, "Name"},
		{"written with an escape", `{"name":"a","n\u0061me":"b"}`, "name"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := paramOf(t, dirsvc.CheckJSON([]byte(c.body))); got != c.param {
				t.Fatalf("param %q, want %q", got, c.param)
			}
			if dirsvc.CheckJSONText([]byte(c.body)) != nil {
				t.Fatal("CheckJSONText refuses a repeated member: it is CheckJSON's to")
			}
		})
	}
}

func TestCheckJSONTakesWhatKeepsTheRule(t *testing.T) {
	for _, body := range []string{
		`{"description":"Walk-in\tclinic\nBookings by phone","name":"Harbour \u0026 Co \ud83d\ude00"}`,
		`[1, -2.5e3, true, false, null, "x", {"a": []}, {}]`,
		` "just a string" `,
		`{"names":{"a":1,"b":1},"other":{"a":1}}`, // the same name in two objects
	} {
		if err := dirsvc.CheckJSON([]byte(body)); err != nil {
			t.Errorf("CheckJSON(%s) = %v", body, err)
		}
		if err := dirsvc.CheckJSONText([]byte(body)); err != nil {
			t.Errorf("CheckJSONText(%s) = %v", body, err)
		}
	}
	for _, body := range []string{``, `{`, `{"a":1,}`, `{"a":1} {"a":2}`, `{"a" 1}`, `["a",]x`, strings.Repeat("[", 300) + strings.Repeat("]", 300)} {
		if got := paramOf(t, dirsvc.CheckJSON([]byte(body))); got == "" {
			t.Errorf("CheckJSON(%.40s) names nothing", body)
		}
	}
}

func TestNormaliseJSONLineBreaksReadsCRLFAsLF(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"description":"One\r\nTwo"}`, `{"description":"One\nTwo"}`},
		{`{"description":"One\u000d\u000aTwo\u000D\nThree"}`, `{"description":"One\u000aTwo\nThree"}`},
		{`{"description":"a lone \r stays"}`, `{"description":"a lone \r stays"}`},
		{`{"description":"an escaped backslash \\r\n is no CR"}`, `{"description":"an escaped backslash \\r\n is no CR"}`},
		{`{"name":"plain"}`, `{"name":"plain"}`},
	} {
		if got := dirsvc.NormaliseJSONLineBreaks([]byte(c.in)); !bytes.Equal(got, []byte(c.want)) {
			t.Errorf("NormaliseJSONLineBreaks(%s) = %s, want %s", c.in, got, c.want)
		}
	}
}

func TestDecodeJSONNamesWhatIsWrong(t *testing.T) {
	type body struct {
		Name     string `json:"name"`
		Reporter struct {
			Email string `json:"email"`
		} `json:"reporter"`
		Description string `json:"description"`
	}
	for _, c := range []struct{ name, body, param string }{
		{"a member of the wrong type", `{"reporter":{"email":5}}`, "reporter.email"},
		{"a member the body does not take", `{"nom":"x"}`, "nom"},
		{"a control character", `{"name":"x\u0007"}`, "name"},
		{"a repeated member", `{"name":"x","name":"y"}`, "name"},
		{"two values", `{} {}`, "body"},
		{"a body of null", ` null `, "body"},
		{"a member of null", `{"name":null}`, "name"},
		{"a nested member of null", `{"reporter":{"email":null}}`, "reporter.email"},
		{"an object of null", `{"reporter":null}`, "reporter"},
		{"an element of null", `{"nom":[null]}`, "nom[0]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var v body
			if got := paramOf(t, dirsvc.DecodeJSON([]byte(c.body), &v)); got != c.param {
				t.Fatalf("param %q, want %q", got, c.param)
			}
		})
	}
	t.Run("a CRLF line break is kept as LF", func(t *testing.T) {
		var v body
		if err := dirsvc.DecodeJSON([]byte(`{"description":"One\r\nTwo"}`), &v); err != nil || v.Description != "One\nTwo" {
			t.Fatalf("DecodeJSON = %v, description %q", err, v.Description)
		}
	})
}

// An access request made on the command line (dirsvc clients request) keeps the rule in its reason.
func TestAccessRequestReasonKeepsTheTextRule(t *testing.T) {
	r := dirsvc.AccessRequest{Directory: "small", Scopes: []string{dirsvc.ScopePractitionersRead},
		PractitionerListReason: "Our app lists\nthe GPs \u202eof each clinic."}
	if got := paramOf(t, r.Validate()); got != "practitionerListReason" {
		t.Fatalf("param %q, want practitionerListReason", got)
	}
	r.PractitionerListReason = "Our app lists\nthe GPs of each clinic."
	if err := r.Validate(); err != nil {
		t.Fatalf("a reason in two lines: %v", err)
	}
}
