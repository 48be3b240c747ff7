package federation

import (
	"errors"
	"strings"
	"testing"

	"github.com/dirsvc/dirsvc"
)

// A record mirrored from another directory keeps the text rule too: one whose text breaks it is
// left out of the harvest (recordFromView refuses it, naming the field), as an unreadable one is.
func TestAMirroredRecordWhoseTextBreaksTheRuleIsRefused(t *testing.T) {
	read := func(entity string) error {
		_, err := recordFromView(dirsvc.KindOrganisation, []byte(entity), dirsvc.Everyone, "https://up.example.org/d/north")
		return err
	}
	if err := read(`{"publicId":"org_north","name":"North Health","description":"Walk-in\tclinic.\nBook by phone."}`); err != nil {
		t.Fatalf("a record that keeps the rule: %v", err)
	}
	for _, c := range []struct{ name, entity, field string }{
		{"a right-to-left override in its name", `{"publicId":"org_north","name":"North \u202eHealth"}`, "name"},
		{"a raw right-to-left override", "{\"publicId\":\"org_north\",\"name\":\"North \u202eHealth\"}", "name"},
		{"BEL in its description", `{"publicId":"org_north","name":"North Health","description":"a\u0007b"}`, "description"},
		{"a line break in its name", `{"publicId":"org_north","name":"North\nHealth"}`, "name"},
		{"U+0085 in a contact", "{\"publicId\":\"org_north\",\"name\":\"North Health\",\"contacts\":[{\"kind\":\"phone\",\"value\":\"+61 2 9\u0085\"}]}", "contacts[0].value"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := read(c.entity)
			var e *dirsvc.Error
			if err == nil || !strings.Contains(err.Error(), "U+") && !strings.Contains(err.Error(), "one line") {
				t.Fatalf("err = %v, want the text rule's refusal", err)
			}
			if !errors.As(err, &e) || e.Param != c.field {
				t.Fatalf("err = %v, want it to name %s", err, c.field)
			}
		})
	}
}

// The command line's moderation (dirsvc moderation) reaches the service without a body: its note and
// names keep the text rule there.
func TestModerationOnTheCommandLineKeepsTheTextRule(t *testing.T) {
	s := New(Config{}) // every refusal below comes before the stores are asked
	ctx := t.Context()
	for _, c := range []struct {
		name  string
		err   error
		field string
	}{
		{"a note with ESC", func() error {
			_, err := s.Act(ctx, "small", dirsvc.NewUUID(), dirsvc.ActionResolve, "Cora", "Called them \x1b[31mtoday")
			return err
		}(), "note"},
		{"an operator with a right-to-left override", func() error {
			_, err := s.Act(ctx, "small", dirsvc.NewUUID(), dirsvc.ActionResolve, "Co\u202era", "")
			return err
		}(), "operator"},
		{"a moderator's name with a line break", s.AddModerator(ctx, "small", dirsvc.Moderator{Name: "Cora\nSmith", Role: dirsvc.RoleCurator}), "name"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var e *dirsvc.Error
			if !errors.As(c.err, &e) || e.Code != dirsvc.EInvalid || e.Param != c.field {
				t.Fatalf("err = %v, want an invalid-parameter error naming %s", c.err, c.field)
			}
		})
	}
}
