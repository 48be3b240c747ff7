package main

import (
	"database/sql"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// upstreamFixture is an upstream directory "up" of three records, as its token endpoint, change feed
// and forwarded-proposal endpoints answer a client: enough of the API to harvest and forward, each
// request checked for what the service must send.
type upstreamFixture struct {
	t        *testing.T
	mu       sync.Mutex
	proposal map[string]any // the last proposal posted
	refuse   bool           // answer proposals 409 mirrored-record
}

const (
	fixtureClient = "dirc_aggregate"
	fixtureSecret = "an upstream secret that is long enough"
	fixtureToken  = "upstream-access-token"
	fixtureRecipt = "0b6f7c2e-4c1a-4f7e-9a53-2f7d8c1e5b90"
)

func (f *upstreamFixture) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/oauth/token" {
		id, secret, ok := r.BasicAuth()
		id, _ = url.QueryUnescape(id) // RFC 6749 2.3.1: form-encoded before Basic
		secret, _ = url.QueryUnescape(secret)
		if !ok || id != fixtureClient || secret != fixtureSecret || r.FormValue("grant_type") != "client_credentials" || r.FormValue("directory") != "up" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		io.WriteString(w, `{"access_token":"`+fixtureToken+`","token_type":"Bearer","expires_in":300}`)
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+fixtureToken {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	switch {
	case r.Method == "GET" && r.URL.Path == "/v1/d/up/changes":
		if r.URL.Query().Get("expand") != "entity" {
			f.t.Errorf("the harvest asked for the feed without expand=entity: %s", r.URL)
		}
		w.Header().Set("X-DIR-Audience", "partner")
		items := `[]`
		if r.URL.Query().Get("since") == "" {
			items = `[
{"publicId":"org_up1","entityType":"organisation","version":1,"localRevision":1,"eventType":"created","cursor":"c1","occurredAt":"2026-01-01T00:00:00Z",
 "entity":{"publicId":"org_up1","version":1,"localRevision":1,"lastUpdated":"2026-01-01T00:00:00Z","name":"Upstream Health"}},
{"publicId":"loc_up1","entityType":"location","version":1,"localRevision":1,"eventType":"created","cursor":"c2","occurredAt":"2026-01-01T00:00:00Z",
 "entity":{"publicId":"loc_up1","version":1,"localRevision":1,"lastUpdated":"2026-01-01T00:00:00Z","name":"Upstream Health Sydney",
  "organisation":{"publicId":"org_up1","name":"Upstream Health"},"address":{"lines":["1 Main Street"],"locality":"Sydney","state":"NSW","postcode":"2000","country":"AU"},
  "addressWithheld":false,"point":{"lat":-33.87,"lon":151.21},"area":"Sydney NSW 2000","areas":["state:nsw"]}},
{"publicId":"svc_up1","entityType":"service","version":1,"localRevision":1,"eventType":"created","cursor":"c3","occurredAt":"2026-01-01T00:00:00Z",
 "entity":{"publicId":"svc_up1","version":1,"localRevision":1,"lastUpdated":"2026-01-01T00:00:00Z","name":"Upstream clinic","slug":"upstream-clinic",
  "organisation":{"publicId":"org_up1","name":"Upstream Health"},"location":{"publicId":"loc_up1","name":"Upstream Health Sydney"},
  "type":{"code":"gp","label":"General practice"},"typeDisplay":"General practice","platformTypeDisplay":"General practice","categoryCode":null,
  "categoryIcon":"briefcase-medical","referralRequiredFromLabels":[],"description":"A clinic."}}]`
		}
		io.WriteString(w, `{"items":`+items+`,"nextCursor":"c3","hasMore":false}`)
	case r.Method == "POST" && r.URL.Path == "/v1/d/up/federation/forwarded/proposals":
		var p map[string]any
		if r.Header.Get("Content-Type") != "application/json" || json.NewDecoder(r.Body).Decode(&p) != nil {
			f.t.Errorf("the proposal is not a JSON body")
		}
		f.mu.Lock()
		f.proposal = p
		refuse := f.refuse
		f.mu.Unlock()
		if refuse {
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusConflict)
			io.WriteString(w, `{"type":"/problems/mirrored-record","title":"Mirrored record","status":409,"code":"mirrored-record","detail":"The record is mirrored here from elsewhere."}`)
			return
		}
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"id":"`+fixtureRecipt+`","status":"pending"}`)
	case r.Method == "GET" && r.URL.Path == "/v1/d/up/federation/forwarded/"+fixtureRecipt:
		io.WriteString(w, `{"id":"`+fixtureRecipt+`","status":"accepted"}`)
	default:
		w.WriteHeader(http.StatusNotFound)
	}
}

// TestMirrorForward harvests a record from an upstream and forwards a correction of it: dirsvc
// mirror forward posts the proposal to the upstream with the mirror's client credentials and prints
// the receipt, dirsvc mirror receipt reads it back; a record that is not mirrored, a bad field and the
// upstream's refusal are errors that say so.
func TestMirrorForward(t *testing.T) {
	up := &upstreamFixture{t: t}
	srv := httptest.NewServer(up)
	defer srv.Close()
	data := importSmall(t)
	t.Setenv("DIRSVC_MIRROR_CLIENT_SECRET", fixtureSecret)
	if _, log, err := runCLI(t, "mirror", "--data", data, "add", "--dir", "small", "--name", "up", "--upstream", srv.URL,
		"--upstream-dir", "up", "--client-id", fixtureClient, "--allow-loopback"); err != nil {
		t.Fatalf("mirror add: %v\n%s", err, log)
	}
	// The secret is kept sealed under the server key: ops.db (in every backup) does not give it away.
	if stored := storedMirrorSecret(t, data, "small", "up"); !strings.HasPrefix(stored, "sealed:") || strings.Contains(stored, fixtureSecret) {
		t.Errorf("ops.db holds the mirror's client secret as %q", stored)
	}
	out, log, err := runCLI(t, "mirror", "--data", data, "run-once", "--dir", "small", "up", "--allow-loopback")
	if err != nil || !strings.Contains(out, `"written":3`) {
		t.Fatalf("mirror run-once: %v %s\n%s", err, out, log)
	}
	shown, _, err := runCLI(t, "record", "--data", data, "--dir", "small", "show", "svc_up1")
	if err != nil || !strings.Contains(shown, `"origin": "`+srv.URL+`/v1/d/up/federation/manifest"`) {
		t.Fatalf("the harvested service: %v %s", err, shown)
	}

	out, log, err = runCLI(t, "mirror", "--data", data, "forward", "--dir", "small", "--record", "svc_up1",
		"--field", "description=Open on Saturdays too.", "--message", "Seen on the clinic's door.", "--allow-loopback")
	if err != nil {
		t.Fatalf("mirror forward: %v\n%s", err, log)
	}
	if want := `{"id":"` + fixtureRecipt + `","status":"pending"}`; strings.TrimSpace(out) != want {
		t.Errorf("mirror forward printed %s, want %s", out, want)
	}
	want := map[string]any{"publicId": "svc_up1", "changes": map[string]any{"description": "Open on Saturdays too."},
		"message": "Seen on the clinic's door.", "reference": "small/svc_up1"}
	if got, _ := json.Marshal(up.proposal); string(got) != mustJSON(t, want) {
		t.Errorf("the upstream received %s, want %s", got, mustJSON(t, want))
	}
	out, _, err = runCLI(t, "mirror", "--data", data, "receipt", "--dir", "small", fixtureRecipt, "--allow-loopback")
	if err != nil || !strings.Contains(out, `"status":"accepted"`) {
		t.Errorf("mirror receipt: %v %s", err, out)
	}

	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"a record that is not mirrored", []string{"--record", "svc_gp", "--field", "description=x"}, "not a mirrored record"},
		{"no field", []string{"--record", "svc_up1"}, "--field"},
		{"a field without text", []string{"--record", "svc_up1", "--field", "description"}, "NAME=TEXT"},
	} {
		_, log, err := runCLI(t, append([]string{"mirror", "--data", data, "forward", "--dir", "small", "--allow-loopback"}, c.args...)...)
		if err == nil || !strings.Contains(err.Error()+log, c.want) {
			t.Errorf("%s: %v %s; want an error naming %q", c.name, err, log, c.want)
		}
	}
	up.mu.Lock()
	up.refuse = true
	up.mu.Unlock()
	_, _, err = runCLI(t, "mirror", "--data", data, "forward", "--dir", "small", "--record", "svc_up1", "--field", "name=X", "--allow-loopback")
	if err == nil || !strings.Contains(err.Error(), "409") || !strings.Contains(err.Error(), "mirrored-record") {
		t.Errorf("a refused proposal: %v", err)
	}
	// Without loopback allowed, the guard keeps every request from the upstream on 127.0.0.1.
	_, _, err = runCLI(t, "mirror", "--data", data, "receipt", "--dir", "small", fixtureRecipt)
	if err == nil || !strings.Contains(err.Error(), "not a public internet address") {
		t.Errorf("a receipt read from a loopback upstream without loopback allowed: %v", err)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// storedMirrorSecret reads the client secret ops.db holds for a mirror, as stored.
func storedMirrorSecret(t *testing.T, data, dir, name string) string {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(data, "dirs", dir, "ops.db")+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var stored string
	if err := db.QueryRow("SELECT client_secret FROM mirrors WHERE name = ?", name).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	return stored
}
