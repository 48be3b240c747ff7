package federation_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/primary"
	"github.com/dirsvc/dirsvc/primary/federation"
	"github.com/dirsvc/dirsvc/primary/webhook"
)

// TestWroteIsToldOfEveryBatchHarvested: what a harvest writes and refuses, batch by batch, adds up
// to what the harvest reports.
func TestWroteIsToldOfEveryBatchHarvested(t *testing.T) {
	ctx := context.Background()
	up := newFedService(t)
	c, secret, err := up.access.CreateClient(ctx, primary.NewClient{Name: "aggregate", Directory: "small",
		Grants: []dirsvc.Grant{{Directory: "small", Tier: dirsvc.Partner, Limit: dirsvc.DefaultPartnerLimit,
			Scopes: dirsvc.NormalScopes([]string{dirsvc.ScopeFeedRead, dirsvc.ScopeGraphRead})}}})
	if err != nil {
		t.Fatal(err)
	}
	agg := bytes.ReplaceAll(smallFile(t), []byte(`"slug":"small"`), []byte(`"slug":"agg"`))
	store := storeOf(t, t.TempDir(), bytes.SplitN(agg, []byte("\n"), 2)[0]) // the directory, no records
	if err := store.AddMirror(ctx, "agg", dirsvc.Mirror{Name: "small", Upstream: up.URL, UpstreamDir: "small",
		ClientID: c.ID, Secret: secret, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	var told dirsvc.MirrorStats
	batches := 0
	h := federation.NewHarvester(federation.MirrorConfig{Store: store, Guard: webhook.NewGuard(true), PageSize: 3,
		Wrote: func(ms dirsvc.MirrorStats) {
			told.Written, told.Refused, batches = told.Written+ms.Written, told.Refused+ms.Refused, batches+1
		}})
	st, err := h.RunOnce(ctx, "agg", "small")
	if err != nil {
		t.Fatal(err)
	}
	if st.Written == 0 || told.Written != st.Written || told.Refused != st.Refused || batches == 0 {
		t.Errorf("told %d written and %d refused in %d batches; the harvest wrote %d and refused %d", told.Written, told.Refused, batches, st.Written, st.Refused)
	}
}
