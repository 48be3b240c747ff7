package federation

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/primary/seal"
	"github.com/dirsvc/dirsvc/primary/webhook"
)

// ForwardedProposal is a correction of a mirrored record sent to its upstream (section 4.8): the
// upstream's public ID of the record, the text fields to change, a message for the upstream's
// moderators and this directory's own reference.
type ForwardedProposal struct {
	PublicID  string            `json:"publicId"`
	Changes   map[string]string `json:"changes"`
	Message   string            `json:"message,omitempty"`
	Reference string            `json:"reference,omitempty"`
}

// Forwarder sends corrections of mirrored records to their upstreams with the mirrors' client
// credentials, through the primary's outbound guard.
type Forwarder struct{ client *upstreamClient }

// NewForwarder returns a forwarder whose requests pass g, and which opens mirrors' client secrets
// with s. A proposal is sent once: sent again after an answer that came too late, the upstream would
// queue it twice.
func NewForwarder(g *webhook.Guard, s *seal.Sealer) *Forwarder {
	return &Forwarder{client: newUpstreamClient(g, s, 30*time.Second, 0)}
}

// Forward posts p to the mirror's upstream (POST federation/forwarded/proposals) and returns the
// upstream's receipt as it gave it (at least an id and a status: see Receipt); a refusal is an error with the upstream's status and words.
func (f *Forwarder) Forward(ctx context.Context, m *dirsvc.Mirror, p ForwardedProposal) (json.RawMessage, error) {
	body, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	resp, err := f.client.do(ctx, m, http.MethodPost, "/federation/forwarded/proposals", body, http.StatusCreated, http.StatusOK)
	if err != nil {
		return nil, fmt.Errorf("forward the proposal: %w", err)
	}
	defer resp.Body.Close()
	return readReceipt(resp)
}

// Receipt reads a receipt the upstream gave the mirror's client (GET federation/forwarded/{id}).
func (f *Forwarder) Receipt(ctx context.Context, m *dirsvc.Mirror, id string) (json.RawMessage, error) {
	if !dirsvc.ValidUUID(id) {
		return nil, dirsvc.InvalidParam("id", "a receipt id is a UUID")
	}
	resp, err := f.client.do(ctx, m, http.MethodGet, "/federation/forwarded/"+url.PathEscape(id), nil, http.StatusOK)
	if err != nil {
		return nil, fmt.Errorf("read the receipt: %w", err)
	}
	defer resp.Body.Close()
	return readReceipt(resp)
}

func readReceipt(resp *http.Response) (json.RawMessage, error) {
	var r struct{ ID, Status string }
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxReceipt+1))
	if err != nil || len(b) > maxReceipt || json.Unmarshal(b, &r) != nil || r.ID == "" || r.Status == "" {
		return nil, fmt.Errorf("the upstream's answer is not a receipt (id and status)")
	}
	return json.RawMessage(b), nil
}

// maxReceipt bounds a receipt read from an upstream.
const maxReceipt = 64 << 10
