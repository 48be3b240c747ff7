package dirdb

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/dirsvc/dirsvc"
)

// publicPageKinds are the kinds of record with a page of their own, in public-ID order.
var publicPageKinds = []dirsvc.Kind{dirsvc.KindLocation, dirsvc.KindOrganisation, dirsvc.KindService}

// publicPagesCountSQL counts the public tier's views of one kind (walks projections_public).
const publicPagesCountSQL = `SELECT count(*) FROM projections INDEXED BY projections_public
WHERE audiences & 1 = 1 AND public_id > ? AND public_id < ?`

// publicPagesSQL reads a page of them, in public-ID order (walks projections_public).
const publicPagesSQL = `SELECT public_id, updated_ms FROM projections INDEXED BY projections_public
WHERE audiences & 1 = 1 AND public_id > ? AND public_id < ?
ORDER BY public_id LIMIT ? OFFSET ?`

// PublicPageCount returns how many records have a page the public tier sees: the services,
// locations and organisations it may read.
func (d *Directory) PublicPageCount(ctx context.Context) (int, error) {
	total := 0
	err := d.longRead(ctx, func(ctx context.Context) error {
		total = 0
		for _, k := range publicPageKinds {
			lo, hi := kindBounds(k, "")
			var n int
			if err := d.readers.QueryRowContext(ctx, publicPagesCountSQL, lo, hi).Scan(&n); err != nil {
				return err
			}
			total += n
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("count public pages: %w", err)
	}
	return total, nil
}

// PublicPages returns up to limit of the records with a page the public tier sees, in public-ID
// order, after the public ID after and skipping offset more.
func (d *Directory) PublicPages(ctx context.Context, after string, offset, limit int) ([]dirsvc.PublicPage, error) {
	var out []dirsvc.PublicPage
	err := d.longRead(ctx, func(ctx context.Context) error {
		out = out[:0]
		skip := offset
		for _, k := range publicPageKinds {
			if len(out) >= limit {
				break
			}
			lo, hi := kindBounds(k, after)
			if lo >= hi {
				continue
			}
			if skip > 0 {
				var n int
				if err := d.readers.QueryRowContext(ctx, publicPagesCountSQL, lo, hi).Scan(&n); err != nil {
					return err
				}
				if n <= skip {
					skip -= n
					continue
				}
			}
			rows, err := d.readers.QueryContext(ctx, publicPagesSQL, lo, hi, limit-len(out), skip)
			if err != nil {
				return err
			}
			skip = 0
			for rows.Next() {
				var p dirsvc.PublicPage
				var ms sql.NullInt64
				if err := rows.Scan(&p.PublicID, &ms); err != nil {
					rows.Close()
					return err
				}
				if ms.Valid {
					p.Updated = time.UnixMilli(ms.Int64).UTC()
				}
				out = append(out, p)
			}
			if err := rows.Close(); err != nil {
				return err
			}
			if err := rows.Err(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read public pages: %w", err)
	}
	return out, nil
}

// kindBounds returns the exclusive bounds of the public IDs of kind k after the public ID after.
func kindBounds(k dirsvc.Kind, after string) (lo, hi string) {
	r := kindRange("", k)
	lo, hi = r.args[0].(string), r.args[1].(string)
	// The prefix itself is no public ID, so "greater than the prefix" starts the kind's range.
	return max(lo, after), hi
}
