package edge_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/fhir/go/fhirversion"
	"github.com/google/fhir/go/jsonformat"
)

// fhirValidator checks FHIR resources offline: each must be valid R4 by google/fhir's jsonformat
// (types, cardinality, primitive formats, required elements), and in an Australian directory meet
// the rules of the AU Base 6.0.0 StructureDefinitions in fhir/testdata/au-base (identifier systems,
// type patterns, value patterns and prefixes, the HPI Luhn check digit, au-address, fixed values and
// the claimed profiles).
type fhirValidator struct {
	un          *jsonformat.Unmarshaller
	identifiers map[string]auIdentifierRule // by system
	address     auAddressRule
	profiles    map[string]string // profile URL|version by resource type
	mu          sync.Mutex
	checked     int
}

// auIdentifierRule is what an AU Base identifier profile requires.
type auIdentifierRule struct {
	profile  string
	system   string
	typeCode [2]string // system, code of the type pattern; empty when none
	patterns []*regexp.Regexp
	prefixes []string
	length   int
	luhn     bool
}

// auAddressRule is what au-address requires.
type auAddressRule struct {
	postalCode *regexp.Regexp
	country    string
	states     []string
}

var (
	validatorOnce sync.Once
	validator     *fhirValidator
	validatorErr  error
)

// newFHIRValidator loads the validator once for the test binary.
func newFHIRValidator(tb testing.TB) *fhirValidator {
	tb.Helper()
	validatorOnce.Do(func() { validator, validatorErr = loadFHIRValidator() })
	if validatorErr != nil {
		tb.Fatal(validatorErr)
	}
	return validator
}

type sdElement struct {
	ID                     string          `json:"id"`
	Path                   string          `json:"path"`
	FixedURI               string          `json:"fixedUri"`
	FixedString            string          `json:"fixedString"`
	PatternCodeableConcept json.RawMessage `json:"patternCodeableConcept"`
	Constraint             []struct {
		Key        string `json:"key"`
		Expression string `json:"expression"`
	} `json:"constraint"`
	Binding *struct {
		ValueSet string `json:"valueSet"`
	} `json:"binding"`
}

type structureDefinition struct {
	URL          string `json:"url"`
	Version      string `json:"version"`
	Type         string `json:"type"`
	Differential struct {
		Element []sdElement `json:"element"`
	} `json:"differential"`
	Snapshot struct {
		Element []sdElement `json:"element"`
	} `json:"snapshot"`
}

var (
	matchesRE    = regexp.MustCompile(`matches\('([^']*)'\)`)
	startsWithRE = regexp.MustCompile(`startsWith\('([^']*)'\)`)
	lengthRE     = regexp.MustCompile(`length\(\) = ([0-9]+)`)
)

func loadFHIRValidator() (*fhirValidator, error) {
	un, err := jsonformat.NewUnmarshaller("UTC", fhirversion.R4)
	if err != nil {
		return nil, err
	}
	v := &fhirValidator{un: un, identifiers: map[string]auIdentifierRule{}, profiles: map[string]string{}}
	files, err := filepath.Glob(filepath.Join("..", "fhir", "testdata", "au-base", "StructureDefinition-*.json"))
	if err != nil || len(files) == 0 {
		return nil, err
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var sd structureDefinition
		if err := json.Unmarshal(b, &sd); err != nil {
			return nil, err
		}
		switch sd.Type {
		case "Identifier":
			rule := auIdentifierRule{profile: sd.URL}
			for _, e := range sd.Differential.Element {
				switch e.Path {
				case "Identifier.system":
					rule.system = e.FixedURI
				case "Identifier.type":
					var cc struct {
						Coding []struct{ System, Code string } `json:"coding"`
					}
					if len(e.PatternCodeableConcept) > 0 {
						if err := json.Unmarshal(e.PatternCodeableConcept, &cc); err != nil {
							return nil, err
						}
						rule.typeCode = [2]string{cc.Coding[0].System, cc.Coding[0].Code}
					}
				case "Identifier":
					for _, c := range e.Constraint {
						for _, m := range matchesRE.FindAllStringSubmatch(c.Expression, -1) {
							rule.patterns = append(rule.patterns, regexp.MustCompile(m[1]))
						}
						for _, m := range startsWithRE.FindAllStringSubmatch(c.Expression, -1) {
							rule.prefixes = append(rule.prefixes, m[1])
						}
						if m := lengthRE.FindStringSubmatch(c.Expression); m != nil {
							rule.length, _ = strconv.Atoi(m[1])
						}
					}
				}
			}
			// HPI numbers carry a Luhn check digit (the profiles name the format; the check digit
			// is the Healthcare Identifiers Service's rule).
			rule.luhn = strings.Contains(sd.URL, "/au-hpio") || strings.Contains(sd.URL, "/au-hpii")
			if rule.system == "" {
				continue
			}
			v.identifiers[rule.system] = rule
		case "Address":
			for _, e := range sd.Snapshot.Element {
				switch e.Path {
				case "Address.postalCode":
					for _, c := range e.Constraint {
						if m := matchesRE.FindStringSubmatch(c.Expression); m != nil {
							v.address.postalCode = regexp.MustCompile(m[1])
						}
					}
				case "Address.country":
					v.address.country = e.FixedString
				case "Address.state":
					// The bound value set (australian-states-territories-2) is not in the package:
					// its codes are these.
					if e.Binding != nil && strings.Contains(e.Binding.ValueSet, "australian-states-territories") {
						v.address.states = []string{"ACT", "NSW", "NT", "OTHER", "QLD", "SA", "TAS", "VIC", "WA"}
					}
				}
			}
		default:
			v.profiles[sd.Type] = sd.URL + "|" + sd.Version
		}
	}
	if v.address.postalCode == nil || v.address.country == "" || len(v.address.states) == 0 || len(v.identifiers) < 6 || len(v.profiles) != 5 {
		return nil, errBadStructureDefinitions
	}
	return v, nil
}

type validatorError string

func (e validatorError) Error() string { return string(e) }

const errBadStructureDefinitions = validatorError("fhir/testdata/au-base lacks the rules the validator reads")

// luhnOK reports whether the digits pass the Luhn check.
func luhnOK(s string) bool {
	sum := 0
	for i := 0; i < len(s); i++ {
		d := int(s[len(s)-1-i] - '0')
		if i%2 == 1 {
			if d *= 2; d > 9 {
				d -= 9
			}
		}
		sum += d
	}
	return sum%10 == 0
}

// check validates one resource (JSON) of a directory of country; it returns what is wrong.
func (v *fhirValidator) check(country string, raw []byte) []string {
	v.mu.Lock()
	v.checked++
	v.mu.Unlock()
	var problems []string
	if _, err := v.un.Unmarshal(raw); err != nil {
		problems = append(problems, "R4 (jsonformat): "+err.Error())
	}
	if country != "AU" {
		return problems
	}
	var r struct {
		ResourceType string `json:"resourceType"`
		Meta         struct {
			Profile []string `json:"profile"`
		} `json:"meta"`
		Identifier []struct {
			System string `json:"system"`
			Value  string `json:"value"`
			Type   struct {
				Coding []struct{ System, Code string } `json:"coding"`
			} `json:"type"`
		} `json:"identifier"`
		Address json.RawMessage `json:"address"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return append(problems, err.Error())
	}
	if want, ok := v.profiles[r.ResourceType]; ok && !slices.Contains(r.Meta.Profile, want) {
		problems = append(problems, "meta.profile does not claim "+want)
	}
	for _, id := range r.Identifier {
		rule, ok := v.identifiers[id.System]
		if !ok {
			continue
		}
		if rule.typeCode[1] != "" && !slices.ContainsFunc(id.Type.Coding, func(c struct{ System, Code string }) bool {
			return c.System == rule.typeCode[0] && c.Code == rule.typeCode[1]
		}) {
			problems = append(problems, rule.profile+": type lacks "+rule.typeCode[0]+"#"+rule.typeCode[1])
		}
		for _, p := range rule.patterns {
			if !p.MatchString(id.Value) {
				problems = append(problems, rule.profile+": "+id.Value+" does not match "+p.String())
			}
		}
		for _, p := range rule.prefixes {
			if !strings.HasPrefix(id.Value, p) {
				problems = append(problems, rule.profile+": "+id.Value+" does not start with "+p)
			}
		}
		if rule.length > 0 && len(id.Value) != rule.length {
			problems = append(problems, rule.profile+": "+id.Value+" is not "+strconv.Itoa(rule.length)+" long")
		}
		if rule.luhn && !luhnOK(id.Value) {
			problems = append(problems, rule.profile+": "+id.Value+" fails the Luhn check")
		}
	}
	var addrs []struct {
		Text       string   `json:"text"`
		Line       []string `json:"line"`
		State      string   `json:"state"`
		PostalCode string   `json:"postalCode"`
		Country    string   `json:"country"`
	}
	if len(r.Address) > 0 && (r.ResourceType == "Organization" || r.ResourceType == "Location") {
		if r.Address[0] == '[' {
			json.Unmarshal(r.Address, &addrs)
		} else {
			addrs = make([]struct {
				Text       string   `json:"text"`
				Line       []string `json:"line"`
				State      string   `json:"state"`
				PostalCode string   `json:"postalCode"`
				Country    string   `json:"country"`
			}, 1)
			json.Unmarshal(r.Address, &addrs[0])
		}
	}
	for _, a := range addrs {
		if a.Text == "" && len(a.Line) == 0 {
			problems = append(problems, "au-address inv-add-0: neither text nor line")
		}
		if a.PostalCode != "" && !v.address.postalCode.MatchString(a.PostalCode) {
			problems = append(problems, "au-address inv-add-3: postal code "+a.PostalCode)
		}
		if a.State != "" && !slices.Contains(v.address.states, a.State) {
			problems = append(problems, "au-address: state "+a.State+" is not in the bound value set")
		}
		if a.Country != v.address.country {
			problems = append(problems, "au-address: country "+a.Country+", fixed "+v.address.country)
		}
	}
	return problems
}
