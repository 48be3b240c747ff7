package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/dirsvc/dirsvc/edge/edgetest"
)

// TestForwardedThroughAnEdge runs a primary and an edge as processes: an aggregator forwards a
// proposal and an issue through the edge, which sends them to the primary; an operator accepts the
// proposal with dirsvc moderation on the primary's data folder, and the steward approves it through
// the admin API at the edge; the client reads the new description at the edge at the position the
// approval answered, and its receipt through the edge says accepted. A steward's approval of a name
// is refused by the binary.
func TestForwardedThroughAnEdge(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	c := startCluster(t)
	id, secret := createClient(t, c.bin, c.primaryData, "--name", "State Aggregate", "--directory", "small",
		"--scopes", "federation:harvest feed:read graph:read", "--tier", "partner")
	moderation := func(args ...string) (string, error) {
		out, err := exec.Command(c.bin, append([]string{"moderation", "--data", c.primaryData, "--dir", "small"}, args...)...).CombinedOutput()
		return string(out), err
	}
	for _, args := range [][]string{{"moderator", "add", "sam", "--steward", "org_coast"}, {"moderator", "add", "cara", "--curator"}} {
		if out, err := moderation(args...); err != nil {
			t.Fatalf("moderation %v: %v\n%s", args, err, out)
		}
	}
	if out, err := moderation("moderators"); err != nil || !strings.Contains(out, "sam\tsteward\torg_coast") || !strings.Contains(out, "cara\tcurator") {
		t.Fatalf("moderators: %v\n%s", err, out)
	}

	checker := edgetest.NewChecker(t)
	cc := clientcredentials.Config{ClientID: id, ClientSecret: secret, TokenURL: "http://" + c.edge + "/oauth/token", AuthStyle: oauth2.AuthStyleInHeader}
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, &http.Client{Transport: checker.Transport(t, nil), Timeout: 30 * time.Second})
	client := cc.Client(ctx)
	send := func(method, path string, body string) (int, http.Header, []byte) {
		t.Helper()
		req, _ := http.NewRequest(method, "http://"+c.edge+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, b
	}
	var receipt struct{ ID, Status string }
	const text = "Counselling for young people and new parents."
	status, header, body := send("POST", "/v1/d/small/federation/forwarded/proposals",
		`{"publicId":"svc_counsel","changes":{"description":"`+text+`"},"message":"From the state directory.","reference":"STATE-12"}`)
	if json.Unmarshal(body, &receipt); status != 201 || receipt.Status != "pending" || header.Get("Location") == "" {
		t.Fatalf("a proposal through the edge: %d %s", status, body)
	}
	gated := struct{ ID string }{}
	if status, _, body = send("POST", "/v1/d/small/federation/forwarded/proposals", `{"publicId":"svc_counsel","changes":{"name":"Coast Youth Counselling"}}`); status != 201 {
		t.Fatalf("a name through the edge: %d %s", status, body)
	}
	json.Unmarshal(body, &gated)
	if status, _, body = send("POST", "/v1/d/small/federation/forwarded/issues", `{"publicId":"svc_gp","category":"closed","reporter":{"email":"r@mail.example","consentToContact":false}}`); status != 201 {
		t.Fatalf("an issue through the edge: %d %s", status, body)
	}
	if status, _, body = send("POST", "/v1/d/small/federation/forwarded/proposals", `{"publicId":"svc_closed","message":"x"}`); status != 404 {
		t.Errorf("a closed record through the edge: %d %s", status, body)
	}

	// The operator finds the proposal in the queue and accepts it.
	out, err := moderation("list", "--status", "pending", "--for", "sam")
	if err != nil || strings.Count(out, "svc_counsel") != 2 || strings.Contains(out, "svc_gp") {
		t.Fatalf("list for sam: %v\n%s", err, out)
	}
	for _, id := range []string{receipt.ID, gated.ID} {
		if out, err := moderation("accept", id, "--as", "sam", "--note", "called the service"); err != nil || !strings.Contains(out, "approving") {
			t.Fatalf("accept %s: %v\n%s", id, err, out)
		}
	}
	if out, err := moderation("approve", gated.ID, "--as", "sam"); err == nil || !strings.Contains(out, "curator") {
		t.Errorf("a steward approves a name: %v\n%s", err, out)
	}
	if out, err := moderation("show", gated.ID); err != nil || !strings.Contains(out, `"status":"approving"`) {
		t.Errorf("the name proposal after the steward: %v\n%s", err, out)
	}

	// The steward approves through the admin API at the edge; the answer's position reads it back.
	a := do(t, "POST", "http://"+c.edge+"/admin/v1/d/small/moderation/"+receipt.ID+"/approve",
		http.Header{"Authorization": {"Bearer " + testAdminToken}}, []byte(`{"operator":"sam"}`))
	pos := a.header.Get("Directory-Position")
	if a.status != 200 || pos == "" || !bytes.Contains(a.body, []byte(`"status":"accepted"`)) {
		t.Fatalf("approve through the edge: %d %q %s", a.status, pos, a.body)
	}
	r := get(t, c.edge, "/v1/d/small/services/svc_counsel?view=brief", http.Header{"Directory-Position": {pos}})
	var svc struct{ Name, Description string }
	if json.Unmarshal(r.body, &svc); r.status != 200 || svc.Description != text || svc.Name != "Coast Counselling" {
		t.Errorf("the service at the edge after the approval: %d %s", r.status, r.body)
	}
	status, _, body = send("GET", "/v1/d/small/federation/forwarded/"+receipt.ID, "")
	if json.Unmarshal(body, &receipt); status != 200 || receipt.Status != "accepted" {
		t.Errorf("the receipt through the edge: %d %s", status, body)
	}
	if checker.Count() < 5 {
		t.Errorf("%d answers checked against the document", checker.Count())
	}
}
