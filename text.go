package dirsvc

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// The text rule. A text the service is given (everything it may publish, and the notes, reasons and
// messages that travel with it) holds characters a reader sees, and nothing that changes how the
// text around it is shown or read. One rule, checked at every way in: the import file, `dirsvc
// record update` and the admin API, forwarded proposals and issues, moderation, sandbox sign-up,
// access requests, webhook and export requests, and records mirrored from another directory. JSON is
// checked member by member (CheckJSON), any other text by CheckText.
//
// Refused in every text:
//   - bytes that are not UTF-8;
//   - the C0 controls U+0000 to U+001F other than tab and line feed. A carriage return is refused
//     too, except in a CRLF line break, which is read as a line feed before the check
//     (NormaliseLineBreaks, NormaliseJSONLineBreaks): browsers send every line break of a form as
//     CRLF, and Windows clients often do in JSON;
//   - DEL and the C1 controls, U+007F to U+009F;
//   - the bidirectional controls U+061C, U+200E, U+200F, U+202A to U+202E and U+2066 to U+2069,
//     which make a text read differently from what it holds (the "Trojan Source" attack).
//
// Free text (MultiLineField) may hold tabs and line feeds. Every other text (a name, a title, a
// code, an address line, a phone number, a URL) is one line: a tab or a line feed there is refused.

// multiLineMembers are the members that hold free text, wherever they appear: record descriptions,
// biographies, staff notes, notes on hours, referral and cost, after-hours help, a directory's
// attribution, a forwarded item's message, a moderator's note, a sign-up's purpose and an access
// request's reason.
func multiLineMember(name string) bool {
	switch name {
	case "description", "bio", "staffNotes", "note", "notes", "afterHours", "attribution",
		"message", "purpose", "practitionerListReason":
		return true
	}
	return false
}

// MultiLineField reports whether a field, named as the service's errors name it (a member, or a path
// such as services[3].name or changes.description), is free text that may hold tabs and line feeds:
// whether its last member is one of the free-text members (description, bio, staffNotes, note,
// notes, afterHours, attribution, message, purpose, practitionerListReason).
func MultiLineField(field string) bool {
	for strings.HasSuffix(field, "]") {
		i := strings.LastIndexByte(field, '[')
		if i < 0 {
			break
		}
		field = field[:i]
	}
	if i := strings.LastIndexByte(field, '.'); i >= 0 {
		field = field[i+1:]
	}
	return multiLineMember(field)
}

// CheckText checks s, the text of field, by the text rule (see above): nil, or an invalid-parameter
// error naming field that says which character is refused (never repeating the text).
func CheckText(field, s string) error {
	multi := -1 // unknown until a tab or line feed asks
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x7f {
			i++
			continue
		}
		r, size := rune(c), 1
		if c >= utf8.RuneSelf {
			if r, size = utf8.DecodeRuneInString(s[i:]); r == utf8.RuneError && size == 1 {
				return textError(field, msgNotUTF8)
			}
		}
		if r == '\t' || r == '\n' {
			if multi < 0 {
				multi = 0
				if MultiLineField(field) {
					multi = 1
				}
			}
			if multi == 0 {
				return textError(field, msgOneLine)
			}
		} else if msg := refusedRune(r); msg != "" {
			return textError(field, msg)
		}
		i += size
	}
	return nil
}

// Messages of the text rule: they name the character refused, never the text.
const (
	msgNotUTF8 = "The text holds bytes that are not UTF-8."
	msgOneLine = "The text is one line: it may not hold a tab or a line break."
	msgCR      = "The text holds a carriage return (U+000D) that does not begin a CRLF line break: end lines with a line feed."
)

// refusedRune returns why r is refused in every text, or "" when it is not. Tab and line feed are
// the caller's to judge.
func refusedRune(r rune) string {
	switch {
	case r == '\r':
		return msgCR
	case r < 0x20 || r >= 0x7f && r <= 0x9f:
		return fmt.Sprintf("The text holds the control character U+%04X, which no text may hold.", r)
	case r == 0x061c || r == 0x200e || r == 0x200f || r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069:
		return fmt.Sprintf("The text holds the bidirectional control U+%04X, which can make a text read differently from what it holds.", r)
	}
	return ""
}

// textError is the invalid-parameter error of a text that breaks the rule.
func textError(field, msg string) *Error {
	return &Error{Code: EInvalid, Param: ClipField(field), Message: msg}
}

// maxField bounds how much of a field's name an error repeats: a path may hold a client's member
// names.
const maxField = 80

// ClipField shortens a field's name (or path) to what an error repeats of it, keeping it valid UTF-8.
func ClipField(field string) string {
	if len(field) > maxField {
		return strings.ToValidUTF8(field[:maxField], "")
	}
	return field
}

// NormaliseLineBreaks returns s with each CRLF line break as a line feed, the form the service keeps
// line breaks in. A carriage return on its own is left for CheckText to refuse.
func NormaliseLineBreaks(s string) string {
	if !strings.Contains(s, "\r\n") {
		return s
	}
	return strings.ReplaceAll(s, "\r\n", "\n")
}
