package edge

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"math/rand"
	"testing"

	"github.com/dirsvc/dirsvc/fhir"
)

func testEntry(id string, body string) *fhirCacheEntry {
	return newFHIREntry(&fhir.Resource{Type: fhir.TypeHealthcareService, ID: fhir.ResourceID(id), Source: id, LastUpdated: "2026-11-23T00:00:00.000Z",
		VersionID: "3", Refs: fhir.PackValues(map[string][]string{"location": {"Location/loc-1"}}),
		Search: fhir.PackValues(map[string][]string{"name": {"Clinic " + id}}), Body: []byte(body)},
		fhir.PackValues(map[string][]string{"true": {"loc_1"}, "false": {"org_2"}}),
		fhirChecked{epoch: 2, gen: 7, viewer: "public{}"})
}

// entryBody returns the JSON of an entry's resource, failing the test if it does not decode.
func entryBody(t *testing.T, e *fhirCacheEntry) string {
	t.Helper()
	b, err := e.body()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestFHIRCacheGivesBackWhatWasKept keeps an entry and reads it back whole, under its own key only.
func TestFHIRCacheGivesBackWhatWasKept(t *testing.T) {
	c := newFHIRCache()
	k := fhirCacheKey{dir: "demo", id: "svc_a", etag: `"e1"`}
	want := testEntry("svc_a", `{"resourceType":"HealthcareService","id":"svc-a"}`)
	c.put(k, want)
	got := c.get(k)
	if got == nil {
		t.Fatal("an entry kept is not found")
	}
	if want.sum != sha256.Sum256(want.res.Body) || got.sum != want.sum {
		t.Errorf("the entry's hash is %x, want %x", got.sum, sha256.Sum256(want.res.Body))
	}
	if n := got.bodyLen(); n != len(want.res.Body) {
		t.Errorf("the entry's body says %d bytes, want %d", n, len(want.res.Body))
	}
	// Appended after other bytes, the resource decodes in place.
	if b, err := got.appendBody([]byte("x")); err != nil || string(b) != "x"+string(want.res.Body) {
		t.Errorf("appendBody gave %q, %v", b, err)
	}
	if got.checked != want.checked || got.refs != want.refs || entryBody(t, got) != string(want.res.Body) ||
		got.res.Type != want.res.Type || got.res.ID != want.res.ID || got.res.Source != want.res.Source ||
		got.res.LastUpdated != want.res.LastUpdated || got.res.VersionID != want.res.VersionID ||
		got.res.Refs != want.res.Refs || got.res.Search != want.res.Search {
		t.Errorf("got %+v %+v, want %+v %+v", got, got.res, want, want.res)
	}
	for _, other := range []fhirCacheKey{{"demo", "svc_a", `"e2"`}, {"demo", "svc_b", `"e1"`}, {"other", "svc_a", `"e1"`}} {
		if c.get(other) != nil {
			t.Errorf("%+v finds the entry of %+v", other, k)
		}
	}
	// An entry kept again replaces the first.
	again := testEntry("svc_a", `{"resourceType":"HealthcareService","id":"svc-a","name":"b"}`)
	again.checked.gen = 8
	c.put(k, again)
	got = c.get(k)
	if got == nil || got.checked.gen != 8 || entryBody(t, got) != string(again.res.Body) || got.sum != again.sum {
		t.Fatalf("the entry kept again is not the one found: %+v", got)
	}
	// An entry read from the cache and kept again (checked anew) keeps its resource as it was.
	found := c.get(k)
	found.checked.gen = 9
	c.put(k, found)
	if got := c.get(k); got == nil || got.checked.gen != 9 || entryBody(t, got) != string(again.res.Body) || got.sum != again.sum {
		t.Errorf("the entry kept again from the cache is not the one found: %+v", got)
	}
}

// TestFHIRCacheStaysInItsBudget keeps three times as many bytes of entries as the budget: the
// chunks held stay within it, the newest entries are all found and the oldest were dropped.
func TestFHIRCacheStaysInItsBudget(t *testing.T) {
	c := newFHIRCache()
	random := make([]byte, 3000) // a body that compression does not shrink away
	rand.New(rand.NewSource(1)).Read(random)
	body := `{"resourceType":"HealthcareService","comment":"` + base64.StdEncoding.EncodeToString(random) + `"}`
	key := func(i int) fhirCacheKey {
		return fhirCacheKey{dir: "demo", id: fmt.Sprintf("svc_%06d", i), etag: `"1"`}
	}
	size := len(encodeFHIREntry(key(0), testEntry(key(0).id, body)))
	n := 3 * fhirCacheBudget / size
	for i := range n {
		c.put(key(i), testEntry(key(i).id, body))
	}
	held := 0
	for i := range c.shards {
		for _, g := range c.shards[i].gens {
			held += len(g.chunks) * fhirCacheChunk
		}
	}
	if held > fhirCacheBudget {
		t.Errorf("the cache holds %d bytes of chunks, over its budget of %d", held, fhirCacheBudget)
	}
	if c.get(key(0)) != nil {
		t.Error("the first entry of three budgets' worth is still kept")
	}
	// The last half budget's worth is in every part's newest generations.
	for i := n - fhirCacheBudget/2/size; i < n; i++ {
		if c.get(key(i)) == nil {
			t.Fatalf("entry %d of the last %d is not kept", i, n)
		}
	}
}

// TestFHIRReadabilityIsKeptByStateAndBounded keeps answers under states: an answer is found under
// its own state only, and the memory starts again empty rather than grow past its bounds.
func TestFHIRReadabilityIsKeptByStateAndBounded(t *testing.T) {
	c := newFHIRReadability()
	at := fhirChecked{epoch: 1, gen: 5, viewer: "public{}"}
	c.put(at, "loc_1", true)
	c.put(at, "org_2", false)
	if ok, known := c.get(at, "loc_1"); !ok || !known {
		t.Errorf("loc_1: %v %v, want readable and known", ok, known)
	}
	if ok, known := c.get(at, "org_2"); ok || !known {
		t.Errorf("org_2: %v %v, want not readable and known", ok, known)
	}
	for _, other := range []fhirChecked{{1, 6, "public{}"}, {2, 5, "public{}"}, {1, 5, "partner{}"}} {
		if _, known := c.get(other, "loc_1"); known {
			t.Errorf("the answer of %+v is found under %+v", at, other)
		}
	}
	for g := range maxFHIRReadableStates + 1 {
		c.put(fhirChecked{epoch: 1, gen: uint64(100 + g)}, "loc_1", true)
	}
	if len(c.states) > maxFHIRReadableStates {
		t.Errorf("%d states kept, at most %d", len(c.states), maxFHIRReadableStates)
	}
	if _, known := c.get(at, "loc_1"); known {
		t.Error("the first state is still kept after more states than the bound")
	}
	for i := range maxFHIRReadable + 10 {
		c.put(at, fmt.Sprintf("svc_%d", i), true)
	}
	if c.n > maxFHIRReadable {
		t.Errorf("%d answers kept, at most %d", c.n, maxFHIRReadable)
	}
}
