package dirdb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/dirsvc/dirsvc"
)

// A search answers with the result cards of the services it found (dirsvc.ResultCardOf), made from
// the caller's views of each service, its site and its roles. Making one reads and decodes those
// views, which costs more than finding the service, so the cards of viewers without a narrowing are
// kept by search document and audience. A document is made anew (with a new ID) whenever a view it
// is made from changes, from the same views a card is made from; so a card kept for a document is
// the card of that document's views for as long as the index holds the document.

// cardKey names a kept card: the search document and the audience bit it was made for.
type cardKey struct {
	doc, bit int64
}

// maxKeptCards bounds the cards kept (about two kilobytes each, with their encoding); past it, half
// are forgotten.
const maxKeptCards = 32 << 10

// keptCard is a card kept, and its encoding as far as a search takes it (dirsvc.CardPrefix).
type keptCard struct {
	card *dirsvc.ResultCard
	json []byte
}

// keptCard returns the card kept for the key, or the zero keptCard.
func (idx *searchIndex) keptCard(k cardKey) keptCard {
	idx.cmu.Lock()
	defer idx.cmu.Unlock()
	return idx.cards[k]
}

// keepCard keeps a card for the key.
func (idx *searchIndex) keepCard(k cardKey, c keptCard) {
	idx.cmu.Lock()
	defer idx.cmu.Unlock()
	if len(idx.cards) >= maxKeptCards {
		n := 0
		for key := range idx.cards { // in no particular order
			if n >= maxKeptCards/2 {
				break
			}
			delete(idx.cards, key)
			n++
		}
	}
	if idx.cards == nil {
		idx.cards = map[cardKey]keptCard{}
	}
	idx.cards[k] = c
}

// forgetCards forgets every card kept.
func (idx *searchIndex) forgetCards() {
	idx.cmu.Lock()
	defer idx.cmu.Unlock()
	idx.cards = nil
}

// withCards gives each hit its card (the viewer's kept one, else one made from its views) and
// leaves out the hits whose service the viewer no longer sees (changed since the search read it).
// The hits' docs are their search documents' IDs. The caller holds neither the index's lock nor
// the gate.
func (d *Directory) withCards(ctx context.Context, v dirsvc.Viewer, hits []dirsvc.SearchHit, docs []int64) ([]dirsvc.SearchHit, error) {
	idx := &d.search
	keep := !v.Narrowing.Narrowed()
	out := hits[:0]
	for i, h := range hits {
		k := cardKey{docs[i], audienceBit(v.Audience)}
		if keep {
			kc := idx.keptCard(k)
			h.Card, h.CardJSON = kc.card, kc.json
		}
		if h.Card == nil {
			c, err := d.cardOf(ctx, v, h.PublicID)
			if err != nil {
				return nil, err
			}
			if c == nil {
				continue
			}
			if h.Card = c; keep {
				if h.CardJSON, err = dirsvc.CardPrefix(c); err != nil {
					return nil, err
				}
				idx.keepCard(k, keptCard{c, h.CardJSON})
			}
		}
		out = append(out, h)
	}
	return out, nil
}

// cardOf makes the result card of a service from the viewer's views of it, its site and its roles;
// nil when the viewer does not see the service.
func (d *Directory) cardOf(ctx context.Context, v dirsvc.Viewer, service string) (*dirsvc.ResultCard, error) {
	var sv dirsvc.ServiceView
	if ok, err := d.viewFor(ctx, v, service, &sv); err != nil || !ok {
		return nil, err
	}
	var site *dirsvc.LocationView
	if sv.Location != nil {
		var lv dirsvc.LocationView
		ok, err := d.viewFor(ctx, v, sv.Location.PublicID, &lv)
		if err != nil {
			return nil, err
		}
		if ok {
			site = &lv
		}
	}
	related, err := d.Related(ctx, v, dirsvc.KindRole, dirsvc.KindService, service)
	if err != nil {
		return nil, err
	}
	roles := make([]*dirsvc.RoleView, len(related))
	for i, p := range related {
		roles[i] = new(dirsvc.RoleView)
		if err := json.Unmarshal(p.Body, roles[i]); err != nil {
			return nil, fmt.Errorf("decode the view of %s: %w", p.PublicID, err)
		}
	}
	c := dirsvc.ResultCardOf(&sv, site, roles)
	return &c, nil
}

// viewFor decodes the viewer's view of a record into dst; false when the viewer does not see it.
func (d *Directory) viewFor(ctx context.Context, v dirsvc.Viewer, id string, dst any) (bool, error) {
	st, err := d.Record(ctx, id, v)
	if errors.Is(err, dirsvc.ErrNotFound) || err == nil && st.View == nil {
		return false, nil
	} else if err != nil {
		return false, err
	}
	if err := json.Unmarshal(st.View.Body, dst); err != nil {
		return false, fmt.Errorf("decode the view of %s: %w", id, err)
	}
	return true, nil
}
