package export

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/edge"
	"github.com/dirsvc/dirsvc/fhir"
)

// FHIR Bulk Data 2.0 export (system level, at the directory's FHIR base): a kick-off (GET, or POST
// with a Parameters resource) answers 202 with the absolute address of a status; the status answers
// 202 (X-Progress, Retry-After) while the export runs, then 200 with the manifest, whose file links
// are the export's signed download links (requiresAccessToken false); DELETE on the status cancels
// and removes the export. Errors are OperationOutcomes (the routes lie under the FHIR base).

// BulkStatusPath returns the path of the status of Bulk Data export id of directory dir.
func BulkStatusPath(dir, id string) string { return "/v1/d/" + dir + "/fhir/$export-poll/" + id }

// bulkRetryAfter is the Retry-After of a status answered while the export runs.
const bulkRetryAfter = 2

// ndjsonFormats are the _outputFormat values meaning NDJSON.
var ndjsonFormats = []string{"application/fhir+ndjson", "application/ndjson", "ndjson"}

// bulkParams reads a kick-off's parameters: _type, _since, _outputFormat, from the query (GET) or a
// Parameters resource (POST). Anything else is refused, naming it.
func bulkParams(w http.ResponseWriter, r *http.Request) (types []string, since *time.Time, err error) {
	vals := map[string][]string{}
	if r.Method == http.MethodPost {
		if vals, err = parametersBody(w, r); err != nil {
			return nil, nil, err
		}
	}
	for k, vs := range r.URL.Query() {
		vals[k] = append(vals[k], vs...)
	}
	for k, vs := range vals {
		switch k {
		case "_type":
			for _, v := range vs {
				for _, t := range strings.Split(v, ",") {
					t = strings.TrimSpace(t)
					if !slices.Contains(fhir.Types, t) {
						return nil, nil, dirsvc.InvalidParam("_type", "_type names resource types of this server: %s", strings.Join(fhir.Types, ", "))
					}
					if !slices.Contains(types, t) {
						types = append(types, t)
					}
				}
			}
		case "_since":
			if len(vs) != 1 {
				return nil, nil, dirsvc.InvalidParam("_since", "_since is given once")
			}
			t, perr := time.Parse(time.RFC3339Nano, vs[0])
			if perr != nil {
				return nil, nil, dirsvc.InvalidParam("_since", "_since must be a FHIR instant such as 2026-01-31T00:00:00Z")
			}
			since = &t
		case "_outputFormat":
			for _, v := range vs {
				if !slices.Contains(ndjsonFormats, v) {
					return nil, nil, dirsvc.InvalidParam("_outputFormat", "_outputFormat is application/fhir+ndjson (the only format offered)")
				}
			}
		default:
			return nil, nil, dirsvc.InvalidParam(edge.ClipName(k), "%s is not a parameter of $export here (it takes _type, _since and _outputFormat)", edge.ClipName(k))
		}
	}
	slices.SortFunc(types, func(a, b string) int { return slices.Index(fhir.Types, a) - slices.Index(fhir.Types, b) })
	return types, since, nil
}

// parametersBody reads a POST kick-off's Parameters resource into parameter values: the body is read
// by the service's rule for bodies (edge.ReadOptionalJSON), and its members beyond those of a
// Parameters resource that carry _type and _since are left alone, as FHIR's tolerant reader would.
func parametersBody(w http.ResponseWriter, r *http.Request) (map[string][]string, error) {
	vals := map[string][]string{}
	var raw json.RawMessage
	if given, err := edge.ReadOptionalJSON(w, r, maxBody, &raw); err != nil || !given {
		return vals, err
	}
	b := []byte(raw)
	var p struct {
		ResourceType string `json:"resourceType"`
		Parameter    []struct {
			Name         string  `json:"name"`
			ValueString  *string `json:"valueString"`
			ValueInstant *string `json:"valueInstant"`
		} `json:"parameter"`
	}
	if err := json.Unmarshal(b, &p); err != nil || p.ResourceType != "Parameters" {
		return nil, dirsvc.InvalidParam("body", "the body is a FHIR Parameters resource")
	}
	for _, pr := range p.Parameter {
		switch {
		case pr.ValueString != nil:
			vals[pr.Name] = append(vals[pr.Name], *pr.ValueString)
		case pr.ValueInstant != nil:
			vals[pr.Name] = append(vals[pr.Name], *pr.ValueInstant)
		default:
			return nil, dirsvc.InvalidParam(edge.ClipName(pr.Name), "parameter %s carries no valueString or valueInstant", edge.ClipName(pr.Name))
		}
	}
	return vals, nil
}

// HandleBulkKickoff starts a Bulk Data export of the directory (GET or POST
// /v1/d/{dir}/fhir/$export).
func (a *API) HandleBulkKickoff(w http.ResponseWriter, r *http.Request) {
	t, err := a.caller(r)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	if !preferAsync(r) {
		a.WriteError(w, r, dirsvc.InvalidParam("Prefer", "a Bulk Data kick-off needs the header Prefer: respond-async"))
		return
	}
	types, since, err := bulkParams(w, r)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	j := newJob(r, t)
	j.Bulk, j.FHIRTypes = true, types
	j.Request = dirsvc.ExportRequest{Formats: []string{dirsvc.ExportFHIR}, Since: since}
	j.BulkRequest = a.Service.cfg.BaseURL + r.URL.RequestURI()
	if slices.Contains(types, fhir.TypePractitioner) && !j.Practitioners {
		a.WriteError(w, r, dirsvc.Errorf(dirsvc.EForbiddenScope, "Exporting practitioners needs the scope %s.", dirsvc.ScopePractitionersRead))
		return
	}
	for _, t := range types { // only the kinds the types are made from are walked
		if k, _ := fhir.KindOf(t); !slices.Contains(j.Request.Types, k) {
			j.Request.Types = append(j.Request.Types, k)
		}
	}
	if err := a.start(r, j); err != nil {
		a.WriteError(w, r, err)
		return
	}
	w.Header().Set("Content-Location", a.Service.cfg.BaseURL+BulkStatusPath(j.Directory, j.ID))
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusAccepted)
}

// preferAsync reports whether the request prefers respond-async.
func preferAsync(r *http.Request) bool {
	for _, h := range r.Header.Values("Prefer") {
		for _, p := range strings.Split(h, ",") {
			if strings.EqualFold(strings.TrimSpace(p), "respond-async") {
				return true
			}
		}
	}
	return false
}

// Manifest is the Bulk Data 2.0 completion manifest.
type Manifest struct {
	TransactionTime     string           `json:"transactionTime"`
	Request             string           `json:"request"`
	RequiresAccessToken bool             `json:"requiresAccessToken"`
	Output              []ManifestOutput `json:"output"`
	Error               []ManifestOutput `json:"error"`
}

// ManifestOutput is one file of a manifest.
type ManifestOutput struct {
	Type  string `json:"type"`
	URL   string `json:"url"`
	Count int64  `json:"count"`
}

// bulkJob returns the path's Bulk Data export if it is the caller's.
func (a *API) bulkJob(r *http.Request) (*job, error) {
	t, err := a.caller(r)
	if err != nil {
		return nil, err
	}
	j, err := a.owned(r, t)
	if err == nil && !j.Bulk {
		err = dirsvc.ErrNotFound
	}
	return j, err
}

// HandleBulkStatus answers a Bulk Data export's status: 202 while it runs, 200 with the manifest
// once it succeeded, the OperationOutcome of its failure otherwise.
func (a *API) HandleBulkStatus(w http.ResponseWriter, r *http.Request) {
	j, err := a.bulkJob(r)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	switch j.Status {
	case dirsvc.ExportQueued, dirsvc.ExportRunning:
		w.Header().Set("X-Progress", j.Status+": "+strconv.FormatInt(j.Records, 10)+" records written")
		w.Header().Set("Retry-After", strconv.Itoa(bulkRetryAfter))
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusAccepted)
		return
	case dirsvc.ExportSucceeded:
	default:
		a.WriteError(w, r, dirsvc.Errorf(dirsvc.EInternal, "The export ended %s: %s", j.Status, j.Error))
		return
	}
	at := j.CreatedAt
	if j.SnapshotAt != nil {
		at = *j.SnapshotAt
	}
	m := Manifest{TransactionTime: at.UTC().Format(time.RFC3339Nano), Request: j.BulkRequest, Output: []ManifestOutput{}, Error: []ManifestOutput{}}
	exp := a.Service.linkExpiry(j)
	for _, f := range j.Files {
		if f.Format == dirsvc.ExportFHIR {
			m.Output = append(m.Output, ManifestOutput{Type: f.Type, URL: a.Service.link(j.ID, f.Name, exp), Count: f.Count})
		}
	}
	w.Header().Set("Expires", exp.Format(http.TimeFormat))
	edge.WriteNoStoreJSON(w, http.StatusOK, m)
}

// HandleBulkCancel cancels a Bulk Data export and removes it (DELETE on its status).
func (a *API) HandleBulkCancel(w http.ResponseWriter, r *http.Request) {
	j, err := a.bulkJob(r)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	if err := a.Service.cancel(r.Context(), j.ID); err != nil {
		a.WriteError(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusAccepted)
}
