package primary

import (
	"context"
	"encoding/json"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/edge"
	"github.com/dirsvc/dirsvc/primary/webhook"
)

// WebhookFeed is the change feed webhooks send: the very feed GET changes serves (edge.Server.Feed,
// over the primary's own files), so an endpoint receives the items, in the tier and narrowing, of
// its client's feed. Head gives a directory's latest change.
func WebhookFeed(e *edge.Server, head func(ctx context.Context, dir string) (int64, error)) webhook.Feed {
	return &webhookFeed{edge: e, head: head}
}

type webhookFeed struct {
	edge *edge.Server
	head func(ctx context.Context, dir string) (int64, error)
}

func (f *webhookFeed) Head(ctx context.Context, dir string) (int64, error) { return f.head(ctx, dir) }

func (f *webhookFeed) Page(ctx context.Context, dir string, reader dirsvc.FeedReader, after int64, limit int) (webhook.FeedPage, error) {
	p, err := f.edge.Feed(ctx, dir, reader, edge.FeedQuery{After: after, Limit: limit})
	if err != nil {
		return webhook.FeedPage{}, err
	}
	out := webhook.FeedPage{Items: make([]json.RawMessage, len(p.Items)), NextCursor: p.NextCursor, Position: p.Next, More: p.HasMore}
	for i := range p.Items {
		if out.Items[i], err = json.Marshal(&p.Items[i]); err != nil {
			return webhook.FeedPage{}, err
		}
	}
	return out, nil
}

// WebhookSealKey returns the key that seals webhook signing secrets at rest, derived from the server
// key: a copy of the webhooks file without the server key gives no secret away.
func WebhookSealKey(serverKey []byte) []byte { return derive(serverKey, "webhook-secret-seal\x00") }

// MirrorSealKey returns the key that seals mirrors' upstream client secrets at rest, derived from the
// server key: a copy of ops.db without the server key gives no secret away.
func MirrorSealKey(serverKey []byte) []byte { return derive(serverKey, "mirror-secret-seal\x00") }

// ExportLinkKey returns the key that signs export download links, derived from the server key: every
// node that shares the server key accepts the links of the others.
func ExportLinkKey(serverKey []byte) []byte { return derive(serverKey, "export-link-signing\x00") }
