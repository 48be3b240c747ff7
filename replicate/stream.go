package replicate

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/benbjohnson/litestream"
	"github.com/dirsvc/dirsvc"
	"github.com/superfly/ltx"
)

// The replication stream is how edges follow a primary: a read-only view, over HTTP, of the
// directory files of the primary's replica folder. A directory file holds every served tier's
// views, partners' included, so the stream is not public: every request carries the replication
// token. It serves nothing else of the folder: the platform file (partner clients' secret MACs,
// grants, signing keys) and the ops files (canonical records with staff-only details) never leave
// the primary but for its backup targets, and a name of one of them is answered as a file the
// primary does not replicate. What edges need of the platform comes as JSON with the files.
//
//	GET /replication/v1/files[?since=V&wait=D]          Files: every directory file's position, and the platform
//	GET /replication/v1/ltx/{level}?name=N[&seek=T]     the LTX files of a level, as ltx.FileInfo
//	GET /replication/v1/ltx/{level}/{file}?name=N       one LTX file (Range requests allowed)
//
// An edge asks for the files with the version it last received and a wait: the answer comes as soon
// as any position moves, or when the wait is over (a long poll), so an idle edge costs one request
// every wait and a change reaches it within one replica sync.

// StreamPrefix is where the stream is served.
const StreamPrefix = "/replication/v1/"

// MaxStreamWait bounds how long one request for the files waits for a change.
const MaxStreamWait = 30 * time.Second

// FilePosition is a replicated file and its position.
type FilePosition struct {
	Name    string `json:"name"`
	TXID    uint64 `json:"txid"`
	Lineage string `json:"lineage"` // see fileLineage
}

// Files is the primary's answer to an edge: the version of the positions (which changes when any
// does), every replicated directory file's position, and what an edge needs of the platform file.
type Files struct {
	Version  string           `json:"version"`
	Files    []FilePosition   `json:"files"`
	Platform *dirsvc.Platform `json:"platform"`
}

// stream is the replication stream of a primary: its routes and what they share.
type stream struct {
	rep      *Replicator
	platform func(context.Context) (*dirsvc.Platform, error)
	auth     []byte // the Authorization header every request must carry
	mux      *http.ServeMux
}

// Stream returns the handler of the replication stream of a primary replicating with rep to a target
// with a folder: its directory files only (see Streamed). Requests must carry "Authorization: Bearer
// <token>". platform returns what edges need of the platform file.
func Stream(rep *Replicator, token string, platform func(context.Context) (*dirsvc.Platform, error)) (http.Handler, error) {
	if rep.target.Dir == "" {
		return nil, errors.New("replicate: the replication stream is served from a replica folder")
	}
	if err := dirsvc.CheckSecret(token); err != nil {
		return nil, fmt.Errorf("replicate: the replication token is weak: %w; %s", err, dirsvc.GenerateSecretHint)
	}
	s := &stream{rep: rep, platform: platform, auth: []byte("Bearer " + token), mux: http.NewServeMux()}
	s.mux.HandleFunc("GET "+StreamPrefix+"files", s.files)
	s.mux.HandleFunc("GET "+StreamPrefix+"ltx/{level}", s.ltxFiles)
	s.mux.HandleFunc("GET "+StreamPrefix+"ltx/{level}/{file}", s.ltxFile)
	return s, nil
}

// ServeHTTP answers a request that carries the replication token; any other is refused.
func (s *stream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), s.auth) != 1 {
		challenge := `Bearer realm="dirsvc-replication"` // RFC 6750, as every 401 of the service
		if r.Header.Get("Authorization") != "" {
			challenge += `, error="invalid_token"`
		}
		w.Header().Set("WWW-Authenticate", challenge)
		streamError(w, r, s.rep, http.StatusUnauthorized, "the replication token is missing or wrong", nil)
		return
	}
	s.mux.ServeHTTP(w, r)
}

// files answers the positions of the streamed files and the platform, at once or, with wait, when
// they move past the version since (or the wait is over).
func (s *stream) files(w http.ResponseWriter, r *http.Request) {
	var wait time.Duration
	if v := r.URL.Query().Get("wait"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 || d > MaxStreamWait {
			streamError(w, r, s.rep, http.StatusBadRequest, "wait: want a duration up to "+MaxStreamWait.String(), nil)
			return
		}
		wait = d
	}
	since := r.URL.Query().Get("since")
	deadline := time.Now().Add(wait)
	looked := s.rep.moved.Load() - 1 // look at once
	for {
		moved := s.rep.moved.Load()
		if moved == looked && time.Now().Before(deadline) {
			select {
			case <-r.Context().Done():
				return
			case <-time.After(streamPoll):
			}
			continue
		}
		looked = moved
		files, version := s.rep.positions(Streamed)
		// The answer carries the platform, so a change to the platform file is a new version
		// too (or an edge would learn of a switch only when its wait is over). Only the
		// position counts, never anything read from the file.
		version += "." + strconv.FormatUint(s.rep.position(dirsvc.PlatformFile), 36) + "." + s.rep.Lineage(dirsvc.PlatformFile)
		if version != since || !time.Now().Before(deadline) {
			p, err := s.platform(r.Context())
			if err != nil {
				streamError(w, r, s.rep, http.StatusInternalServerError, msgInternal, fmt.Errorf("read the platform: %w", err))
				return
			}
			writeJSON(w, r, s.rep, Files{Version: version, Files: files, Platform: p})
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-time.After(streamPoll):
		}
	}
}

// ltxFiles lists the LTX files of a streamed file at a level, from the transaction seek on.
func (s *stream) ltxFiles(w http.ResponseWriter, r *http.Request) {
	c, level, ok := streamClient(w, r, s.rep)
	if !ok {
		return
	}
	var seek uint64
	if v := r.URL.Query().Get("seek"); v != "" {
		var err error
		if seek, err = strconv.ParseUint(v, 10, 64); err != nil {
			streamError(w, r, s.rep, http.StatusBadRequest, "seek: want a transaction ID", nil)
			return
		}
	}
	itr, err := c.LTXFiles(r.Context(), level, ltx.TXID(seek), r.URL.Query().Get("meta") == "1")
	if err != nil {
		streamError(w, r, s.rep, http.StatusInternalServerError, msgInternal, err)
		return
	}
	infos, err := ltx.SliceFileIterator(itr)
	if err != nil {
		streamError(w, r, s.rep, http.StatusInternalServerError, msgInternal, err)
		return
	}
	if infos == nil {
		infos = []*ltx.FileInfo{}
	}
	writeJSON(w, r, s.rep, infos)
}

// ltxFile serves one LTX file of a streamed file.
func (s *stream) ltxFile(w http.ResponseWriter, r *http.Request) {
	c, level, ok := streamClient(w, r, s.rep)
	if !ok {
		return
	}
	minTXID, maxTXID, err := ltx.ParseFilename(r.PathValue("file"))
	if err != nil {
		streamError(w, r, s.rep, http.StatusBadRequest, "want the name of an LTX file", nil)
		return
	}
	rc, err := c.OpenLTXFile(r.Context(), level, minTXID, maxTXID, 0, 0)
	if errors.Is(err, os.ErrNotExist) {
		streamError(w, r, s.rep, http.StatusNotFound, msgNotFound, nil)
		return
	} else if err != nil {
		streamError(w, r, s.rep, http.StatusInternalServerError, msgInternal, err)
		return
	}
	defer rc.Close()
	w.Header().Set("Content-Type", "application/octet-stream")
	if f, ok := rc.(io.ReadSeeker); ok { // a file of the folder: served without reading it whole
		http.ServeContent(w, r, "", time.Time{}, f)
		return
	}
	b, err := io.ReadAll(rc)
	if err != nil {
		streamError(w, r, s.rep, http.StatusInternalServerError, msgInternal, err)
		return
	}
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(b))
}

// streamPoll is how often a waiting request for the files looks whether anything moved (one atomic
// load); it computes the positions only when something did.
const streamPoll = 20 * time.Millisecond

// Streamed reports whether the stream serves the file named name: a directory file. The platform
// and ops files are the primary's own.
func Streamed(name string) bool {
	f, _, ok := dirsvc.ParseFileName(name)
	return ok && f == dirsvc.DirectoryFile
}

// streamClient returns the folder client of the file the request names, and the level. A file the
// stream does not serve, or that the primary does not replicate, is not found: the answer is the
// same whether the name is a directory unknown to the primary or one of the primary's own files.
func streamClient(w http.ResponseWriter, r *http.Request, rep *Replicator) (litestream.ReplicaClient, int, bool) {
	level, err := strconv.Atoi(r.PathValue("level"))
	if err != nil || level < 0 || level > litestream.SnapshotLevel {
		streamError(w, r, rep, http.StatusBadRequest, "want a level of LTX files", nil)
		return nil, 0, false
	}
	name := r.URL.Query().Get("name")
	if !Streamed(name) || !rep.replicates(name) {
		streamError(w, r, rep, http.StatusNotFound, msgNotFound, nil)
		return nil, 0, false
	}
	c, err := rep.target.folderClient(name)
	if err != nil {
		streamError(w, r, rep, http.StatusInternalServerError, msgInternal, err)
		return nil, 0, false
	}
	return c, level, true
}

// What the stream answers on errors: a message for the edge, never a path or an internal error.
const (
	msgNotFound = "no such file on this primary's replication stream"
	msgInternal = "the replication stream failed: see the primary's log"
)

func writeJSON(w http.ResponseWriter, r *http.Request, rep *Replicator, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		streamError(w, r, rep, http.StatusInternalServerError, msgInternal, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

// streamError answers msg with status and logs cause, when there is one.
func streamError(w http.ResponseWriter, r *http.Request, rep *Replicator, status int, msg string, cause error) {
	if cause != nil {
		rep.log.Error("replication stream", "method", r.Method, "path", r.URL.Path, "name", r.URL.Query().Get("name"), "status", status, "err", cause)
	}
	http.Error(w, msg, status)
}

// StreamClient is a read-only replica client of one file over a primary's replication stream: what
// an edge restores and follows from.
type StreamClient struct {
	base, token, name string
	http              *http.Client
}

var _ litestream.ReplicaClient = (*StreamClient)(nil)

// NewStreamClient returns the client of the file named name on the primary at base (its address,
// for example https://primary.internal:8080).
func NewStreamClient(base, token, name string, hc *http.Client) *StreamClient {
	if hc == nil {
		hc = &http.Client{Timeout: time.Minute}
	}
	return &StreamClient{base: strings.TrimSuffix(base, "/"), token: token, name: name, http: hc}
}

// errReadOnly answers every write: the stream is read-only.
var errReadOnly = errors.New("replicate: the replication stream is read-only")

func (c *StreamClient) Type() string                    { return "stream" }
func (c *StreamClient) Init(context.Context) error      { return nil }
func (c *StreamClient) SetLogger(*slog.Logger)          {}
func (c *StreamClient) DeleteAll(context.Context) error { return errReadOnly }
func (c *StreamClient) DeleteLTXFiles(context.Context, []*ltx.FileInfo) error {
	return errReadOnly
}
func (c *StreamClient) WriteLTXFile(context.Context, int, ltx.TXID, ltx.TXID, io.Reader) (*ltx.FileInfo, error) {
	return nil, errReadOnly
}

func (c *StreamClient) get(ctx context.Context, path string, header http.Header) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", c.base+StreamPrefix+path, nil)
	if err != nil {
		return nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	return c.http.Do(req)
}

// LTXFiles lists the LTX files of a level from seek on.
func (c *StreamClient) LTXFiles(ctx context.Context, level int, seek ltx.TXID, useMetadata bool) (ltx.FileIterator, error) {
	q := url.Values{"name": {c.name}}
	if seek > 0 {
		q.Set("seek", strconv.FormatUint(uint64(seek), 10))
	}
	if useMetadata {
		q.Set("meta", "1")
	}
	resp, err := c.get(ctx, "ltx/"+strconv.Itoa(level)+"?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound { // a file the stream does not serve has no LTX files
		return ltx.NewFileInfoSliceIterator(nil), nil
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("replication stream: list %s level %d: %s", c.name, level, resp.Status)
	}
	var infos []*ltx.FileInfo
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&infos); err != nil {
		return nil, fmt.Errorf("replication stream: list %s: %w", c.name, err)
	}
	out := infos[:0]
	for _, fi := range infos {
		if fi.MinTXID >= seek {
			out = append(out, fi)
		}
	}
	return ltx.NewFileInfoSliceIterator(out), nil
}

// OpenLTXFile opens one LTX file, or size bytes of it from offset (all of it when size is 0).
func (c *StreamClient) OpenLTXFile(ctx context.Context, level int, minTXID, maxTXID ltx.TXID, offset, size int64) (io.ReadCloser, error) {
	h := http.Header{}
	switch {
	case size > 0:
		h.Set("Range", fmt.Sprintf("bytes=%d-%d", offset, offset+size-1))
	case offset > 0:
		h.Set("Range", fmt.Sprintf("bytes=%d-", offset))
	}
	path := "ltx/" + strconv.Itoa(level) + "/" + ltx.FormatFilename(minTXID, maxTXID) + "?" + url.Values{"name": {c.name}}.Encode()
	resp, err := c.get(ctx, path, h)
	if err != nil {
		return nil, err
	}
	switch resp.StatusCode {
	case http.StatusOK, http.StatusPartialContent:
		return resp.Body, nil
	case http.StatusNotFound:
		resp.Body.Close()
		return nil, os.ErrNotExist
	}
	resp.Body.Close()
	return nil, fmt.Errorf("replication stream: get %s %s: %s", c.name, path, resp.Status)
}

// RestoreFrom restores the file named name from a replica client (a primary's stream) into the
// data folder, as Restore does from a target.
func RestoreFrom(ctx context.Context, data string, c litestream.ReplicaClient, name string, at At) (Restored, error) {
	return restore(ctx, data, c, name, at)
}
