package replicate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/benbjohnson/litestream"
	"github.com/superfly/ltx"
)

// One history per file
//
// Positions (Litestream transaction IDs) name a file's states in the targets: a restore reads the
// files up to a position, and edges follow them. Two different changes under one position would
// make a later restore mix histories and pass its integrity check. So before a file is replicated:
//
//   - seed: when the bucket holds a later position than the folder (a new folder beside a data folder
//     restored from the bucket, as on a fresh volume), the folder takes the bucket's history: the
//     files a restore of its latest state reads, and its newest level-0 file. A folder that held an
//     older part of some history is moved aside first, never merged.
//   - align: Litestream's local state of the file (beside it, .<file>-litestream) must continue
//     from the folder's position. When it cannot (a restored file has none; a state behind the
//     folder; a state whose level-0 files were pruned), it is started again at the folder's newest
//     level-0 file. Litestream then finds the file's pages do not follow on from that state and
//     replicates them whole as the next position: a restored file's history goes on after
//     everything the targets hold, as one full copy, and nothing acknowledged before is overwritten.

// seed brings the folder's copy of a file to the bucket's history when the bucket holds a later
// position, and returns what the bucket holds.
func (r *Replicator) seed(ctx context.Context, name string) (bucket map[fileKey]*ltx.FileInfo, seeded bool, err error) {
	fc, err := r.target.folderClient(name)
	if err != nil {
		return nil, false, err
	}
	bc, err := r.target.bucketClient(name)
	if err != nil {
		return nil, false, err
	}
	bucket, err = listLevels(ctx, bc)
	if err != nil {
		return nil, false, fmt.Errorf("%w: %w", errBucketUnlisted, err)
	}
	folder, err := listLevels(ctx, fc)
	if err != nil {
		return nil, false, fmt.Errorf("list the replica folder: %w", err)
	}
	if maxTXID(bucket) <= maxTXID(folder) {
		return bucket, false, nil
	}
	if len(folder) > 0 {
		dir := filepath.Join(r.target.Dir, filepath.FromSlash(name))
		aside := fmt.Sprintf("%s.behind-%d", dir, time.Now().Unix())
		if err := os.Rename(dir, aside); err != nil {
			return nil, false, fmt.Errorf("move aside a replica folder behind the bucket: %w", err)
		}
		r.log.Warn("the replica folder held an older history than the bucket: moved aside", "file", name, "to", aside,
			"folder", uint64(maxTXID(folder)), "bucket", uint64(maxTXID(bucket)))
	}
	plan, err := litestream.CalcRestorePlan(ctx, bc, 0, time.Time{}, r.log)
	if err != nil {
		return nil, false, fmt.Errorf("plan the bucket's latest state: %w", err)
	}
	if newest := newestL0(bucket); newest != nil && keyOf(plan[len(plan)-1]) != keyOf(newest) {
		plan = append(plan, newest)
	}
	for _, info := range plan {
		if err := copyLTX(ctx, bc, fc, info); err != nil {
			return nil, false, fmt.Errorf("copy %s of level %d from the bucket: %w", ltx.FormatFilename(info.MinTXID, info.MaxTXID), info.Level, err)
		}
	}
	r.log.Info("the replica folder continues the bucket's history", "file", name, "position", uint64(maxTXID(bucket)), "files", len(plan))
	return bucket, true, nil
}

// errBucketUnlisted is the cause of a seed that could not list the bucket.
var errBucketUnlisted = errors.New("list the bucket")

// continuesFolder reports whether Litestream's local state of a file continues the folder's
// history (align keeps it as it is): the folder then holds everything this data folder replicated,
// and the bucket, which only the mirror of this folder writes, cannot hold a later position. Such
// a file may be replicated while the bucket cannot be listed (the mirror lists it once it answers):
// a primary killed during an outage of object storage starts again on its own folder.
func (r *Replicator) continuesFolder(ctx context.Context, name string, db *litestream.DB) bool {
	fc, err := r.target.folderClient(name)
	if err != nil {
		return false
	}
	folder, err := listLevels(ctx, fc)
	if err != nil {
		return false
	}
	_, local, err := db.MaxLTX()
	pos := maxTXID(folder)
	// A file replicated nowhere yet (a directory made during the outage) starts its history in the
	// folder; were the bucket to hold one after all, the mirror would refuse to copy into it.
	return err == nil && (pos == 0 && local == 0 || pos > 0 && local >= pos && continuous(db, pos, local))
}

// newestL0 returns the level-0 file with the highest position, or nil.
func newestL0(files map[fileKey]*ltx.FileInfo) *ltx.FileInfo {
	var newest *ltx.FileInfo
	for k, info := range files {
		if k.level == 0 && (newest == nil || k.max > newest.MaxTXID) {
			newest = info
		}
	}
	return newest
}

// align makes Litestream's local state of a file continue from the folder's position (see above);
// after a seed the local state is started again whatever it holds, since it belongs to another
// history than the folder's.
func (r *Replicator) align(ctx context.Context, name string, db *litestream.DB, seeded bool) error {
	fc, err := r.target.folderClient(name)
	if err != nil {
		return err
	}
	folder, err := listLevels(ctx, fc)
	if err != nil {
		return fmt.Errorf("list the replica folder: %w", err)
	}
	_, local, err := db.MaxLTX()
	if err != nil {
		return fmt.Errorf("read the local replication state: %w", err)
	}
	pos := maxTXID(folder)
	if !seeded && local >= pos && continuous(db, pos, local) {
		return nil // Litestream copies the local files after the folder's position
	}
	if err := os.RemoveAll(db.LTXDir()); err != nil {
		return fmt.Errorf("drop the local replication state: %w", err)
	}
	if pos == 0 {
		// The folder holds nothing and the local state cannot bring it from the start: the file's
		// replication starts afresh, under a lineage of its own so that edges copy it anew.
		lineage, err := newFileLineage(r.data, name)
		if err != nil {
			return err
		}
		r.mu.Lock()
		r.lineages[name] = lineage
		r.mu.Unlock()
		r.log.Warn("the replica folder holds nothing of the file and its local state is incomplete: starting its history afresh", "file", name)
		return nil
	}
	newest := newestL0(folder)
	if newest == nil || newest.MaxTXID != pos || newest.MinTXID != pos {
		return fmt.Errorf("the replica folder's newest position %d has no level-0 file to continue from", pos)
	}
	rc, err := fc.OpenLTXFile(ctx, 0, pos, pos, 0, 0)
	if err != nil {
		return err
	}
	defer rc.Close()
	out := db.LTXPath(0, pos, pos)
	if err := os.MkdirAll(filepath.Dir(out), 0o700); err != nil {
		return err
	}
	if err := writeFrom(out, rc); err != nil {
		return fmt.Errorf("start the local replication state: %w", err)
	}
	r.log.Info("the file's replication continues after the targets' position", "file", name, "position", uint64(pos), "local", uint64(local))
	return nil
}

// continuous reports whether the local state holds every level-0 file after from up to to.
func continuous(db *litestream.DB, from, to ltx.TXID) bool {
	for txid := from + 1; txid <= to; txid++ {
		if _, err := os.Stat(db.LTXPath(0, txid, txid)); err != nil {
			return false
		}
	}
	return true
}

// writeFrom writes a file whole or not at all.
func writeFrom(path string, r io.Reader) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, r)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}

// notifying is a replica client that tells of every file written or deleted (the folder's client,
// whose changes the mirror copies to the bucket).
type notifying struct {
	litestream.ReplicaClient
	changed func()
}

func (c *notifying) WriteLTXFile(ctx context.Context, level int, minTXID, maxTXID ltx.TXID, r io.Reader) (*ltx.FileInfo, error) {
	info, err := c.ReplicaClient.WriteLTXFile(ctx, level, minTXID, maxTXID, r)
	if err == nil {
		c.changed()
	}
	return info, err
}

func (c *notifying) DeleteLTXFiles(ctx context.Context, a []*ltx.FileInfo) error {
	err := c.ReplicaClient.DeleteLTXFiles(ctx, a)
	c.changed()
	return err
}
