package federation

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"slices"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/edge"
)

// The forwarding routes (section 4.8), served on the primary (edges forward them). Every route needs
// a client's access token with graph:propose (federation:harvest implies it) in the path's
// directory.

// API serves the forwarding routes of a Service. Token returns the caller's verified access token
// (nil without one); WriteError writes an error as the service's problem answers.
type API struct {
	Service    *Service
	Token      func(r *http.Request) *dirsvc.AccessToken
	WriteError func(w http.ResponseWriter, r *http.Request, err error)
}

// caller checks the request's token: a client of the directory with graph:propose.
func (a *API) caller(r *http.Request) (*dirsvc.AccessToken, error) {
	t := a.Token(r)
	if t == nil {
		return nil, dirsvc.Errorf(dirsvc.EForbiddenScope, "Forwarding needs a partner client's access token with the scope %s.", dirsvc.ScopeGraphPropose)
	}
	if !t.HasScope(dirsvc.ScopeGraphPropose) {
		return nil, dirsvc.Errorf(dirsvc.EForbiddenScope, "This needs the scope %s.", dirsvc.ScopeGraphPropose)
	}
	return t, nil
}

// readBody reads a capped JSON object into v by the service's rule for bodies (edge.ReadBody, then
// dirsvc.DecodeJSON). A member the route does not take (at the top, or in the nested objects named
// in nested) answers 400 naming it by its path; so does a member of the wrong type.
func readBody(w http.ResponseWriter, r *http.Request, v any, allowed []string, nested map[string][]string) error {
	b, err := edge.ReadBody(w, r, MaxBody)
	if err != nil {
		return err
	}
	// The rule's own checks first: a member's name is repeated below only once it is known to be text.
	b = dirsvc.NormaliseJSONLineBreaks(b)
	if err := dirsvc.CheckJSON(b); err != nil {
		return err
	}
	if err := knownMembers(b, "", allowed, nested); err != nil {
		return err
	}
	return dirsvc.DecodeJSON(b, v)
}

// knownMembers checks that the JSON object b holds only the allowed members (and, in a nested
// object, the members nested names for it).
func knownMembers(b []byte, prefix string, allowed []string, nested map[string][]string) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil || obj == nil {
		if prefix == "" {
			return dirsvc.InvalidParam("body", "the body is not the JSON object this route takes")
		}
		if string(bytes.TrimSpace(b)) == "null" {
			return nil
		}
		return dirsvc.InvalidParam(prefix, "want a JSON object")
	}
	for name, raw := range obj {
		if !slices.Contains(allowed, name) {
			return dirsvc.InvalidParam(edge.ClipName(prefix+name), "this route takes no member of this name")
		}
		if sub, ok := nested[name]; ok {
			if err := knownMembers(raw, prefix+name+".", sub, nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// replicated makes the client's change durable in every replica before it is answered (see
// Config.Replicate), and reports whether to answer it: a change no replica holds is answered as an
// error (dirsvc.NotReplicated), written here.
func (a *API) replicated(w http.ResponseWriter, r *http.Request) bool {
	cfg := a.Service.cfg
	if cfg.Replicate == nil {
		return true
	}
	err := cfg.Replicate(r.Context(), r.PathValue("dir"))
	switch {
	case err == nil:
	case errors.Is(err, dirsvc.ErrStorageUnconfirmed):
		if cfg.Log != nil {
			cfg.Log.Warn("forwarding: object storage did not confirm a change of a forwarded item in time", "directory", r.PathValue("dir"))
		}
		w.Header().Set("Replication-Pending", "object-storage")
	default:
		a.WriteError(w, r, dirsvc.NotReplicated(err))
		return false
	}
	return true
}

// created answers a new item's receipt, with its address.
func (a *API) created(w http.ResponseWriter, r *http.Request, it *dirsvc.ForwardedItem) {
	if !a.replicated(w, r) {
		return
	}
	w.Header().Set("Location", "/v1/d/"+r.PathValue("dir")+"/federation/forwarded/"+it.ID)
	edge.WriteNoStoreJSON(w, http.StatusCreated, ReceiptOf(it))
}

// HandlePropose takes a forwarded proposal.
func (a *API) HandlePropose(w http.ResponseWriter, r *http.Request) {
	t, err := a.caller(r)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	var p Proposal
	if err := readBody(w, r, &p, []string{"publicId", "changes", "message", "reference"}, nil); err != nil {
		a.WriteError(w, r, err)
		return
	}
	it, err := a.Service.Propose(r.Context(), r.PathValue("dir"), t, p)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	a.created(w, r, it)
}

// HandleIssue takes a forwarded issue.
func (a *API) HandleIssue(w http.ResponseWriter, r *http.Request) {
	t, err := a.caller(r)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	var is Issue
	if err := readBody(w, r, &is, []string{"publicId", "category", "message", "reference", "reporter"},
		map[string][]string{"reporter": {"name", "email", "phone", "consentToContact"}}); err != nil {
		a.WriteError(w, r, err)
		return
	}
	it, err := a.Service.Report(r.Context(), r.PathValue("dir"), t, is)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	a.created(w, r, it)
}

// HandleReceipt answers the caller's receipt; any other answers as a missing one.
func (a *API) HandleReceipt(w http.ResponseWriter, r *http.Request) {
	t, err := a.caller(r)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	it, err := a.Service.Receipt(r.Context(), r.PathValue("dir"), t.ClientID, r.PathValue("id"))
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	edge.WriteNoStoreJSON(w, http.StatusOK, ReceiptOf(it))
}

// HandleWithdraw withdraws the caller's item while nothing is decided.
func (a *API) HandleWithdraw(w http.ResponseWriter, r *http.Request) {
	t, err := a.caller(r)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	it, err := a.Service.Withdraw(r.Context(), r.PathValue("dir"), t.ClientID, r.PathValue("id"))
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	if !a.replicated(w, r) {
		return
	}
	edge.WriteNoStoreJSON(w, http.StatusOK, ReceiptOf(it))
}
