// Package dirsvc holds the domain of the directory service: directories, their records, the audiences
// that may see each detail, and the projection gate that turns a stored record into what one audience
// may see. It imports only the standard library; adapters (dirdb, edge, primary, fhir, replicate)
// implement or consume the interfaces declared here.
package dirsvc

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Audience is a tier of callers. Every response is projected for exactly one audience.
type Audience uint8

// The audiences. Public is every anonymous caller; Professional and Partner are tiers a directory gives
// to partner clients; Staff is the directory's own staff and never leaves the primary's write side.
const (
	Public Audience = iota
	Professional
	Partner
	Staff
)

// ServedAudiences are the tiers that responses are projected for, in order of increasing trust.
var ServedAudiences = []Audience{Public, Professional, Partner}

var audienceNames = [...]string{"public", "professional", "partner", "staff"}

// String returns the tier name used in X-DIR-Audience and in the import format.
func (a Audience) String() string {
	if int(a) < len(audienceNames) {
		return audienceNames[a]
	}
	return fmt.Sprintf("audience(%d)", a)
}

// ParseAudience returns the audience named s.
func ParseAudience(s string) (Audience, error) {
	for i, n := range audienceNames {
		if n == s {
			return Audience(i), nil
		}
	}
	return 0, fmt.Errorf("unknown audience %q", s)
}

// MarshalText writes the tier name.
func (a Audience) MarshalText() ([]byte, error) {
	if int(a) >= len(audienceNames) {
		return nil, fmt.Errorf("unknown audience %d", a)
	}
	return []byte(audienceNames[a]), nil
}

// UnmarshalText reads a tier name.
func (a *Audience) UnmarshalText(b []byte) error {
	v, err := ParseAudience(string(b))
	if err != nil {
		return err
	}
	*a = v
	return nil
}

// Audiences is a set of audiences that may see a record or a detail. The zero set means "not stated";
// ingest replaces it with the documented default, and projection treats it as visible to staff only, so
// a detail whose audiences were never set can never leak.
type Audiences uint8

// Everyone is the set of every served audience.
const Everyone = Audiences(1<<Public | 1<<Professional | 1<<Partner | 1<<Staff)

// StaffOnly is the set of a detail that no served audience sees.
const StaffOnly = Audiences(1 << Staff)

// AudiencesOf returns the set holding the given audiences (staff sees everything, so it is always added).
func AudiencesOf(as ...Audience) Audiences {
	s := StaffOnly
	for _, a := range as {
		s |= 1 << a
	}
	return s
}

// Has reports whether audience a may see what the set guards. Staff sees everything.
func (s Audiences) Has(a Audience) bool { return a == Staff || s&(1<<a) != 0 }

// Or returns s if it is stated, otherwise def.
func (s Audiences) Or(def Audiences) Audiences {
	if s == 0 {
		return def
	}
	return s
}

// Restricted reports whether some served audience may not see what the set guards.
func (s Audiences) Restricted() bool {
	for _, a := range ServedAudiences {
		if !s.Has(a) {
			return true
		}
	}
	return false
}

// List returns the served audiences in the set, or ["staff"] when none.
func (s Audiences) List() []string {
	var out []string
	for _, a := range ServedAudiences {
		if s.Has(a) {
			out = append(out, a.String())
		}
	}
	if len(out) == 0 {
		out = []string{Staff.String()}
	}
	return out
}

// String returns the set as comma separated tier names.
func (s Audiences) String() string { return strings.Join(s.List(), ",") }

// MarshalJSON writes the set as an array of tier names (that of List).
func (s Audiences) MarshalJSON() ([]byte, error) {
	return slices.Clone(audiencesJSON[s.servedIndex()]), nil
}

// audiencesJSON is the JSON of each set of served audiences, by servedIndex: views and canonical
// records hold a set for nearly every detail, and encoding each set's list anew was a tenth of the
// time an import spent encoding them.
var audiencesJSON = func() [][]byte {
	out := make([][]byte, 1<<len(ServedAudiences))
	for i := range out {
		var s Audiences
		for k, a := range ServedAudiences {
			if i&(1<<k) != 0 {
				s |= 1 << a
			}
		}
		b, err := json.Marshal(s.List())
		if err != nil {
			panic(err)
		}
		out[i] = b
	}
	return out
}()

// servedIndex numbers the served audiences of s, one bit each in the order of ServedAudiences.
func (s Audiences) servedIndex() int {
	i := 0
	for k, a := range ServedAudiences {
		if s.Has(a) {
			i |= 1 << k
		}
	}
	return i
}

// UnmarshalJSON reads an array of tier names; "staff" or an empty array mean staff only.
func (s *Audiences) UnmarshalJSON(b []byte) error {
	var names []string
	if err := json.Unmarshal(b, &names); err != nil {
		return fmt.Errorf("audiences: want an array of tier names: %w", err)
	}
	set := StaffOnly
	for _, n := range names {
		a, err := ParseAudience(n)
		if err != nil {
			return err
		}
		set |= 1 << a
	}
	*s = set
	return nil
}
