package s3test

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// A Store evaluates the requests of an access key given a policy (Restrict) as S3 evaluates an
// identity policy: a request is allowed when some statement allows it and none denies it. The
// request's action and resource come from its method and path-style address, its access key from
// the Authorization header (AWS4-HMAC-SHA256 Credential=KEY/...); signatures are not checked.
// Supported: the actions s3:GetObject (GET and HEAD of an object), s3:PutObject (PUT of an object,
// multipart uploads), s3:DeleteObject (DELETE of an object, and each key of a multi-object delete),
// s3:ListBucket (GET and HEAD of the bucket, with the prefix parameter as the condition key
// s3:prefix); the wildcards * and ? in actions and resources; and the condition operators
// StringEquals and StringLike. A request of another kind, or a statement with another condition
// operator, is denied. Keys without a policy may do anything.

// policy is an identity policy document.
type policy struct {
	Version   string
	Statement []statement
}

type statement struct {
	Effect    string
	Action    strings1
	Resource  strings1
	Condition map[string]map[string]strings1
}

// strings1 is a policy value that is a string or a list of strings.
type strings1 []string

func (s *strings1) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*s = []string{one}
		return nil
	}
	return json.Unmarshal(b, (*[]string)(s))
}

// Restrict makes every request signed with the access key subject to the policy document (AWS
// IAM syntax, as replicate.EdgePolicy writes it).
func (s *Store) Restrict(tb testing.TB, accessKey string, document []byte) {
	tb.Helper()
	var p policy
	if err := json.Unmarshal(document, &p); err != nil {
		tb.Fatalf("s3test: the policy of %s: %v", accessKey, err)
	}
	if len(p.Statement) == 0 {
		tb.Fatalf("s3test: the policy of %s has no statement", accessKey)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.policies == nil {
		s.policies = map[string]*policy{}
	}
	s.policies[accessKey] = &p
}

// credentialRE finds the access key of a SigV4 Authorization header.
var credentialRE = regexp.MustCompile(`Credential=([^/,\s]+)/`)

// allowed reports whether the store's policies allow the request. It may read the body (of a
// multi-object delete) and put it back.
func (s *Store) allowed(r *http.Request) bool {
	m := credentialRE.FindStringSubmatch(r.Header.Get("Authorization"))
	if m == nil {
		m = []string{"", r.URL.Query().Get("X-Amz-Credential")}
		m[1], _, _ = strings.Cut(m[1], "/")
	}
	s.mu.Lock()
	p := s.policies[m[1]]
	s.mu.Unlock()
	if p == nil {
		return true
	}
	reqs, ok := requestsOf(r)
	if !ok {
		return false
	}
	for _, req := range reqs {
		if !p.allows(req) {
			return false
		}
	}
	return true
}

// request is one action on one resource, with the condition keys it carries.
type request struct {
	action, resource string
	keys             map[string]string
}

// requestsOf returns what a request does; ok is false for a request this store cannot evaluate.
func requestsOf(r *http.Request) (_ []request, ok bool) {
	bucket, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	arn := "arn:aws:s3:::" + bucket
	q := r.URL.Query()
	object := func(action string) ([]request, bool) {
		return []request{{action: action, resource: arn + "/" + key}}, true
	}
	switch {
	case bucket == "":
		return nil, false
	case key != "" && (r.Method == "GET" || r.Method == "HEAD"):
		return object("s3:GetObject")
	case key != "" && (r.Method == "PUT" || r.Method == "POST"):
		return object("s3:PutObject")
	case key != "" && r.Method == "DELETE" && q.Has("uploadId"):
		return object("s3:AbortMultipartUpload")
	case key != "" && r.Method == "DELETE":
		return object("s3:DeleteObject")
	case (r.Method == "GET" || r.Method == "HEAD") && len(q) == len(listParams(q)):
		return []request{{action: "s3:ListBucket", resource: arn, keys: map[string]string{"s3:prefix": q.Get("prefix")}}}, true
	case r.Method == "POST" && q.Has("delete"):
		keys, err := deletedKeys(r)
		if err != nil {
			return nil, false
		}
		var out []request
		for _, k := range keys {
			out = append(out, request{action: "s3:DeleteObject", resource: arn + "/" + k})
		}
		return out, true
	}
	return nil, false
}

// listParams returns the parameters of q that a listing of objects takes.
func listParams(q map[string][]string) []string {
	var out []string
	for k := range q {
		switch k {
		case "list-type", "x-id", "prefix", "delimiter", "continuation-token", "start-after", "max-keys", "marker", "encoding-type", "fetch-owner":
			out = append(out, k)
		}
	}
	return out
}

// deletedKeys reads the keys of a multi-object delete, and puts the body back for the store.
func deletedKeys(r *http.Request) ([]string, error) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	var d struct {
		Object []struct{ Key string }
	}
	if err := xml.Unmarshal(b, &d); err != nil {
		return nil, err
	}
	var keys []string
	for _, o := range d.Object {
		keys = append(keys, o.Key)
	}
	return keys, nil
}

// allows reports whether some statement allows the request and none denies it.
func (p *policy) allows(req request) bool {
	allowed := false
	for _, st := range p.Statement {
		if !st.matches(req) {
			continue
		}
		switch st.Effect {
		case "Deny":
			return false
		case "Allow":
			allowed = true
		}
	}
	return allowed
}

func (st statement) matches(req request) bool {
	if !matchAny(st.Action, req.action, true) || !matchAny(st.Resource, req.resource, false) {
		return false
	}
	for op, conds := range st.Condition {
		for key, values := range conds {
			got, ok := req.keys[key]
			if !ok {
				return false // a key the request does not carry matches no condition
			}
			switch op {
			case "StringEquals":
				if !contains(values, got) {
					return false
				}
			case "StringLike":
				if !matchAny(values, got, false) {
					return false
				}
			default:
				return false
			}
		}
	}
	return true
}

// matchAny reports whether s matches one of the patterns, with the wildcards * (any run of
// characters, slashes included) and ? (one character); actions are matched ignoring case.
func matchAny(patterns []string, s string, fold bool) bool {
	for _, p := range patterns {
		if fold && wildcard(strings.ToLower(p), strings.ToLower(s)) || !fold && wildcard(p, s) {
			return true
		}
	}
	return false
}

func wildcard(p, s string) bool {
	var re strings.Builder
	re.WriteString("(?s)^")
	for _, c := range p {
		switch c {
		case '*':
			re.WriteString(".*")
		case '?':
			re.WriteString(".")
		default:
			re.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	re.WriteString("$")
	return regexp.MustCompile(re.String()).MatchString(s)
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// denied answers a request the policy does not allow as S3 does: 403 with an AccessDenied error
// (no body for HEAD).
func denied(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(http.StatusForbidden)
	if r.Method == "HEAD" {
		return
	}
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>`+"\n"+
		`<Error><Code>AccessDenied</Code><Message>Access Denied</Message><Resource>%s</Resource></Error>`, xmlEscape(r.URL.Path))
}

func xmlEscape(s string) string {
	var b bytes.Buffer
	xml.EscapeText(&b, []byte(s))
	return b.String()
}
