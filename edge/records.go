package edge

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/dirsvc/dirsvc"
)

// recordPaths are the path segments of the record kinds served as /v1/d/{dir}/<segment>/{publicId}.
var recordPaths = map[dirsvc.Kind]string{
	dirsvc.KindService: "services", dirsvc.KindLocation: "locations", dirsvc.KindOrganisation: "organisations",
	dirsvc.KindPractitioner: "practitioners", dirsvc.KindRole: "roles",
}

// maxMergeHops bounds how far a merged record's survivors are followed.
const maxMergeHops = 8

// reading is the state of one record read: who reads, the directory, the record.
type reading struct {
	dir    dirsvc.DirectoryReader
	info   *dirsvc.Directory
	viewer dirsvc.Viewer
	brief  bool
	status dirsvc.RecordStatus
	now    time.Time // the clock of the read: a page's open status is for it
	// gen is the directory's generation before the record was read: what is composed from the
	// read is at least as new as it (see page).
	gen uint64
}

// aud returns the audience the read is projected for.
func (rd *reading) aud() dirsvc.Audience { return rd.viewer.Audience }

// readRecord resolves a record read to its view for the caller, or to the error to answer: forbidden
// (a client without graph:read), not found (missing, hidden, outside the client's narrowing, wrong
// kind, taken down), gone (closed or removed) or moved (merged). The route says whether the kind's
// default representation is the brief one, and whether it has a page at all.
func (s *Server) readRecord(r *http.Request, rt recordRoute) (*reading, error) {
	brief, err := recordView(r, rt)
	if err != nil {
		return nil, err
	}
	viewer, err := s.viewer(r, dirsvc.ScopeGraphRead)
	if err != nil {
		return nil, err
	}
	return s.resolve(r, rt.kind, viewer, brief)
}

// resolve finds the record of the request's path for the viewer (see readRecord).
func (s *Server) resolve(r *http.Request, kind dirsvc.Kind, viewer dirsvc.Viewer, brief bool) (*reading, error) {
	return s.resolveID(r, kind, r.PathValue("publicId"), viewer, brief)
}

// resolveID is resolve of the record id (the FHIR routes name records by resource id).
func (s *Server) resolveID(r *http.Request, kind dirsvc.Kind, id string, viewer dirsvc.Viewer, brief bool) (*reading, error) {
	dir, info, err := s.directory(r.Context(), r.PathValue("dir"))
	if err != nil {
		return nil, err
	}
	return s.resolveIn(r, dir, info, kind, id, viewer, brief)
}

// resolveIn is resolveID in a directory the request has opened already.
func (s *Server) resolveIn(r *http.Request, dir dirsvc.DirectoryReader, info *dirsvc.Directory, kind dirsvc.Kind, id string, viewer dirsvc.Viewer, brief bool) (*reading, error) {
	if !dirsvc.ValidPublicID(kind, id) || !viewer.Narrowing.AllowsKind(kind) {
		return nil, dirsvc.ErrNotFound
	}
	rd := &reading{dir: dir, info: info, viewer: viewer, brief: brief, now: s.cfg.Now(), gen: dir.Generation()}
	// One call decides between a missing record, a hidden one and one outside the narrowing, at the
	// same cost for each: none of them returns early.
	st, err := dir.Record(r.Context(), id, viewer)
	if err != nil {
		return nil, err
	}
	if st.Kind != kind {
		return nil, dirsvc.ErrNotFound
	}
	rd.status = st
	if st.View != nil {
		return rd, nil
	}
	// What a record that is no longer visible covered is not kept, so a client narrowed to places
	// learns nothing of it: it is missing, as it is for every audience that never saw it.
	if !st.SeenBy.Has(viewer.Audience) || placeNarrowed(viewer.Narrowing) {
		return nil, dirsvc.ErrNotFound
	}
	switch st.State {
	case dirsvc.StateClosed, dirsvc.StateRemoved:
		return nil, dirsvc.Errorf(dirsvc.EGone, "The record was closed or removed.")
	case dirsvc.StateMerged:
		survivor, err := s.survivor(r.Context(), dir, st.Survivor, viewer)
		if err != nil {
			return nil, err
		}
		if survivor != "" {
			return nil, &dirsvc.Error{Code: dirsvc.EMoved, Target: survivor, Message: "The record was merged."}
		}
		return nil, dirsvc.Errorf(dirsvc.EGone, "The record was merged into one you cannot see.")
	}
	return nil, dirsvc.ErrNotFound
}

// placeNarrowed reports whether a narrowing limits places (areas or categories), which only a
// visible record's keys can be checked against.
func placeNarrowed(n dirsvc.Narrowing) bool { return len(n.Areas)+len(n.Categories) > 0 }

// survivor follows a merged record's survivors to one the viewer may see, and returns its public ID;
// "" when the chain ends at a record the viewer cannot see (or is longer than maxMergeHops). A
// survivor the directory does not hold ends the chain too; a failed read is an error, never taken
// for either.
func (s *Server) survivor(ctx context.Context, dir dirsvc.DirectoryReader, id string, v dirsvc.Viewer) (string, error) {
	for range maxMergeHops {
		st, err := dir.Record(ctx, id, v)
		if errors.Is(err, dirsvc.ErrNotFound) {
			return "", nil
		} else if err != nil {
			return "", fmt.Errorf("follow merged record to %s: %w", id, err)
		}
		if st.View != nil {
			return id, nil
		}
		if st.State != dirsvc.StateMerged || !st.SeenBy.Has(v.Audience) {
			return "", nil
		}
		id = st.Survivor
	}
	return "", nil
}

// directory returns the reader and description of the directory named by slug; an unknown slug is not
// found, answered exactly as a missing record.
func (s *Server) directory(ctx context.Context, slug string) (dirsvc.DirectoryReader, *dirsvc.Directory, error) {
	if !dirsvc.ValidSlug(slug) {
		return nil, nil, dirsvc.ErrNotFound
	}
	dir, err := s.cfg.Catalog.Reader(ctx, slug)
	if err != nil {
		return nil, nil, err
	}
	info, err := dir.Info(ctx)
	if err != nil {
		return nil, nil, err
	}
	return dir, info, nil
}

// recordError answers a failed record read; a merged record redirects to its survivor. A 301 and a
// 410 are answers about the record as the caller saw it, so they name the caller's audience as a
// 200 does; a 404 does not, as it must not differ from the answer about a record never published.
func (s *Server) recordError(w http.ResponseWriter, r *http.Request, kind dirsvc.Kind, err error) {
	if e := (*dirsvc.Error)(nil); errors.As(err, &e) && e.Code == dirsvc.EMoved {
		s.redirect(w, r, kind, e.Target)
		return
	}
	s.readError(w, r, err)
}

// readError answers a read that failed: a not-found answer is cached whatever made it, so that all
// are the same; a gone one carries the audience it was answered for.
func (s *Server) readError(w http.ResponseWriter, r *http.Request, err error) {
	switch dirsvc.ErrorCode(err) {
	case dirsvc.ENotFound:
		s.cacheFor(w, r)
	case dirsvc.EGone:
		setAudience(w, audience(r))
		s.cacheFor(w, r)
	}
	s.error(w, r, err)
}

// redirect answers a read of a merged record with 301 and, in Location, the absolute address of its
// survivor on the service's base URL (never a request's Host), the request's query kept. It has no
// body.
func (s *Server) redirect(w http.ResponseWriter, r *http.Request, kind dirsvc.Kind, survivor string) {
	loc := s.cfg.BaseURL + "/v1/d/" + r.PathValue("dir") + "/" + recordPaths[kind] + "/" + url.PathEscape(survivor)
	if r.URL.RawQuery != "" {
		loc += "?" + r.URL.RawQuery
	}
	h := w.Header()
	h.Set("Location", loc)
	setAudience(w, audience(r))
	s.cacheFor(w, r)
	w.WriteHeader(http.StatusMovedPermanently)
}

// recordRoute is what differs between the record reads: the kind, whether its stored brief view
// carries addresses, and how its page is composed (and whether that carries addresses).
type recordRoute struct {
	kind           dirsvc.Kind
	briefDefault   bool // the brief view is the default representation
	briefAddresses func(body []byte) bool
	// page composes the page representation; nil for a kind that has only its brief view (and
	// takes no view parameter).
	page func(s *Server, ctx context.Context, rd *reading) (page any, addresses bool, err error)
}

var (
	serviceRoute = recordRoute{
		kind:           dirsvc.KindService,
		briefAddresses: func([]byte) bool { return false },
		page: func(s *Server, ctx context.Context, rd *reading) (any, bool, error) {
			p, err := s.servicePage(ctx, rd)
			return p, err == nil && servicePageAddresses(p), err
		},
	}
	locationRoute = recordRoute{
		kind:           dirsvc.KindLocation,
		briefAddresses: briefLocationAddresses,
		page: func(s *Server, ctx context.Context, rd *reading) (any, bool, error) {
			p, err := s.locationPage(ctx, rd)
			return p, err == nil && locationPageAddresses(p), err
		},
	}
	organisationRoute = recordRoute{
		kind:           dirsvc.KindOrganisation,
		briefAddresses: briefOrganisationAddresses,
		page: func(s *Server, ctx context.Context, rd *reading) (any, bool, error) {
			p, err := s.organisationPage(ctx, rd)
			return p, err == nil && organisationPageAddresses(p), err
		},
	}
	practitionerRoute = recordRoute{
		kind:           dirsvc.KindPractitioner,
		briefDefault:   true,
		briefAddresses: func([]byte) bool { return false },
		page: func(s *Server, ctx context.Context, rd *reading) (any, bool, error) {
			p, err := s.practitionerPage(ctx, rd)
			return p, false, err
		},
	}
	// A role has one representation, its brief view, so it has no page.
	roleRoute = recordRoute{
		kind:           dirsvc.KindRole,
		briefDefault:   true,
		briefAddresses: func([]byte) bool { return false },
	}
)

func (s *Server) handleGetService(w http.ResponseWriter, r *http.Request) {
	s.getRecord(w, r, serviceRoute)
}

func (s *Server) handleGetPractitioner(w http.ResponseWriter, r *http.Request) {
	s.getRecord(w, r, practitionerRoute)
}

func (s *Server) handleGetRole(w http.ResponseWriter, r *http.Request) {
	s.getRecord(w, r, roleRoute)
}

func (s *Server) handleGetLocation(w http.ResponseWriter, r *http.Request) {
	s.getRecord(w, r, locationRoute)
}

func (s *Server) handleGetOrganisation(w http.ResponseWriter, r *http.Request) {
	s.getRecord(w, r, organisationRoute)
}

// getRecord answers a record read: the stored brief view as it is, or the page composed from the
// views of the same audience.
func (s *Server) getRecord(w http.ResponseWriter, r *http.Request, rt recordRoute) {
	rd, err := s.readRecord(r, rt)
	if err != nil {
		s.recordError(w, r, rt.kind, err)
		return
	}
	v := rd.status.View
	body, etag, addresses := v.Body, v.ETag, rt.briefAddresses(v.Body)
	var f forms
	if v.Encoded != nil {
		f = v.Encoded
	}
	if !rd.brief {
		p, pf, err := s.page(r.Context(), rt, rd)
		if err != nil {
			s.error(w, r, err)
			return
		}
		body, etag, f, addresses = p.body, p.etag, pf, p.addresses
	}
	if rt.kind == dirsvc.KindOrganisation {
		leaders, err := s.leadershipOf(r, rd, v.PublicID)
		if err != nil {
			s.error(w, r, err)
			return
		}
		if leaders != nil {
			body = withMember(body, "leadership", leaders)
			etag, f = s.composed(body)
		}
	}
	if body, etag, f, err = s.localise(w, r, rd.viewer.Audience, body, etag, f); err != nil {
		s.error(w, r, err)
		return
	}
	s.cacheTags(w, r, dirTag(r, v.PublicID))
	s.writeView(w, r, rd, body, etag, f, addresses)
}

// page returns the record's page for the reader, and where its coded forms are kept: the page kept
// (pageCache), or the one composed now from the views of its related records.
func (s *Server) page(ctx context.Context, rt recordRoute, rd *reading) (*keptPage, forms, error) {
	key := pageKey{dir: rd.dir, id: rd.status.View.PublicID, aud: rd.viewer.Audience, country: rd.info.Country}
	minute := rd.now.Unix() / 60
	keep := !rd.viewer.Narrowing.Narrowed()
	rd.now = time.Unix(minute*60, 0).In(rd.now.Location()) // the same status for the whole minute
	gen := rd.gen                                          // read before the record's own view was
	if keep {
		if p := s.pages.get(key, gen, minute); p != nil {
			return p, p.enc, nil
		}
	}
	page, addresses, err := rt.page(s, ctx, rd)
	if err != nil {
		return nil, nil, err
	}
	body, err := json.Marshal(page)
	if err != nil {
		return nil, nil, err
	}
	sum := sha256.Sum256(body)
	p := &keptPage{key: key, gen: gen, minute: minute, body: body, etag: dirsvc.ETagOfSum(sum), addresses: addresses}
	if keep {
		if kept := s.pages.put(p); kept != nil {
			return kept, kept.enc, nil
		}
	}
	return p, s.bodies.forms(sum), nil // not kept: its coded forms are kept by its body's hash
}

// withMember returns the JSON object body with one more member, name, holding the JSON value. Only
// the object's own closing brace is taken off: a body whose last member is an object ends in "}}".
func withMember(body []byte, name string, value []byte) []byte {
	body = bytes.TrimRight(body, " \n")
	out := make([]byte, 0, len(body)+len(name)+len(value)+4)
	out = append(out, bytes.TrimSuffix(body, []byte("}"))...)
	out = append(out, `,"`+name+`":`...)
	out = append(out, value...)
	return append(out, '}')
}
