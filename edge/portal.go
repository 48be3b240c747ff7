package edge

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/json"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/fhir"
)

// The developer portal is a page per directory, made on the server from html/template and the
// embedded style sheet (no script at all): what the directory is, how to get access, the limits,
// and a reference of every operation made from the served OpenAPI document, with an example request
// for each read that works against this very directory. The sandbox sign-up pages of the primary
// are made from the same templates (WriteSignupPage).

//go:embed portal
var portalFiles embed.FS

var portalTemplates = template.Must(template.New("").Funcs(template.FuncMap{
	"lower": strings.ToLower,
	"css":   func() template.CSS { return portalCSS },
}).ParseFS(portalFiles, "portal/*.html"))

// portalCSS is the style sheet, put in each page's head. The Content-Security-Policy allows that
// one style by its hash and nothing else: no script, no other source, no framing.
var portalCSS = func() template.CSS {
	b, err := portalFiles.ReadFile("portal/portal.css")
	if err != nil {
		panic(err)
	}
	return template.CSS(b)
}()

var portalCSP = func() string {
	sum := sha256.Sum256([]byte(portalCSS))
	return "default-src 'none'; style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) +
		"'; img-src 'self' data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
}()

// PortalPath returns the path of a directory's developer portal.
func PortalPath(slug string) string { return "/v1/d/" + slug + "/portal" }

// SandboxSignupPath returns the path of the sandbox sign-up page of the demonstration directory.
func SandboxSignupPath(slug string) string { return PortalPath(slug) + "/sandbox" }

// AccessRequestsPath is where a partner client asks a directory for access (served by the primary).
const AccessRequestsPath = "/v1/access-requests"

// SandboxScopes are the scopes of a sandbox grant: every scope but the explicit ones and those only
// a directory's own admins give (section 5.2, item 3).
var SandboxScopes = []string{dirsvc.ScopeSearchRead, dirsvc.ScopeGraphRead, dirsvc.ScopeFeedRead,
	dirsvc.ScopeExportRun, dirsvc.ScopeWebhooksManage}

// portalPage is what the portal template shows.
type portalPage struct {
	Title    string
	Dir      *dirsvc.Directory
	Info     DeveloperInfo
	Base     string
	Ref      *apiReference
	Tags     []portalTag
	Scopes   []portalScope
	Limits   portalLimits
	Sandbox  sandboxOffer
	Examples int
	// TokenCommand gets a sandbox token into $TOKEN, for the examples that need one.
	TokenCommand string
	// AccessRequestCommand asks this directory for access with a partner client's credentials.
	AccessRequestCommand string
}

type portalTag struct {
	apiTag
	Ops []portalOp
}

// portalOp is an operation with its example request, or why it has none.
type portalOp struct {
	apiOperation
	Anchor string
	// Example is a curl command line that succeeds against this directory; ExampleURL is its
	// address (a page's, opened in a browser). NoExample says why there is none.
	Example, ExampleURL, NoExample string
	// Token is true when the example needs a sandbox token in $TOKEN.
	Token bool
}

type portalScope struct {
	Name, Text string
	InSandbox  bool
}

type portalLimits struct {
	Anonymous, Sandbox, Partner Limits
	Signup                      SignupLimits
}

// sandboxOffer is what the page says about sandbox sign-up.
type sandboxOffer struct {
	// Offered is true when the service has a demonstration directory; Here when it is this one.
	Offered, Here bool
	Directory     string
	SignupPath    string
	PortalPath    string
}

// SignupLimits are the abuse limits of sandbox sign-up: sign-ups per client address and in all,
// per hour and per day.
type SignupLimits struct {
	PerAddressHour, PerAddressDay, TotalHour, TotalDay int
}

// DefaultSignupLimits are the sign-up limits a primary applies unless configured otherwise.
var DefaultSignupLimits = SignupLimits{PerAddressHour: 3, PerAddressDay: 10, TotalHour: 100, TotalDay: 500}

// portalCache keeps each directory's page as rendered for its directory state and day (the
// collections that show depend on the day).
type portalCache struct {
	mu    sync.Mutex
	pages map[string]renderedPortal
}

type renderedPortal struct {
	key   string
	body  []byte
	etag  string
	forms forms // the body's coded forms, kept by its hash
}

// handleGetPortal answers a directory's developer portal. The page is the same for every visitor:
// shared caches may keep it, and it carries a strong entity tag (304 to If-None-Match).
func (s *Server) handleGetPortal(w http.ResponseWriter, r *http.Request) {
	if _, err := readQuery(r); err != nil {
		s.error(w, r, err)
		return
	}
	rd, info, err := s.directory(r.Context(), r.PathValue("dir"))
	if err != nil {
		s.cacheFor(w, r)
		s.error(w, r, err)
		return
	}
	key := strconv.FormatUint(rd.Generation(), 10) + "/" + dirsvc.Today(s.cfg.Now(), info.TimeZone)
	s.portals.mu.Lock()
	page, ok := s.portals.pages[info.Slug]
	s.portals.mu.Unlock()
	if !ok || page.key != key {
		body, err := s.renderPortal(r.Context(), rd, info)
		if err != nil {
			s.error(w, r, err)
			return
		}
		etag, f := s.composed(body)
		page = renderedPortal{key: key, body: body, etag: etag, forms: f}
		s.portals.mu.Lock()
		if s.portals.pages == nil {
			s.portals.pages = map[string]renderedPortal{}
		}
		s.portals.pages[info.Slug] = page
		s.portals.mu.Unlock()
	}
	setPageHeaders(w.Header())
	setAudience(w, audience(r))
	if tokenFrom(r.Context()) == nil {
		w.Header().Set("Cache-Control", "public, max-age=300")
	}
	writeTaggedAs(w, r, page.body, page.etag, page.forms, contentTypeHTML)
}

var contentTypeHTML = []string{"text/html; charset=utf-8"}

// setPageHeaders sets the headers of every page: its security policy, no sniffing, no referrer
// (a sign-up result carries a secret; no page sends its address elsewhere).
func setPageHeaders(h http.Header) {
	h.Set("Content-Security-Policy", portalCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
}

func (s *Server) renderPortal(ctx context.Context, rd dirsvc.DirectoryReader, info *dirsvc.Directory) ([]byte, error) {
	ref, err := s.apiRef()
	if err != nil {
		return nil, err
	}
	base := s.cfg.BaseURL
	p := portalPage{Title: info.Name + " – developer portal", Dir: info, Info: s.devInfo(info), Base: base, Ref: ref,
		Limits: portalLimits{Anonymous: s.cfg.AnonymousLimits, Sandbox: dirsvc.SandboxLimit,
			Partner: dirsvc.DefaultPartnerLimit, Signup: s.signupLimits()}}
	p.Sandbox = s.sandboxOffer(ctx, info.Slug)
	for _, sc := range dirsvc.AllScopes {
		p.Scopes = append(p.Scopes, portalScope{Name: sc, Text: ref.ScopeText[sc], InSandbox: slices.Contains(SandboxScopes, sc)})
	}
	p.TokenCommand = "TOKEN=$(curl -s -u \"$CLIENT_ID:$CLIENT_SECRET\" -d grant_type=client_credentials -d directory=" +
		info.Slug + " " + base + TokenPath + " | sed 's/.*\"access_token\":\"\\([^\"]*\\)\".*/\\1/')"
	p.AccessRequestCommand = "curl -u \"$CLIENT_ID:$CLIENT_SECRET\" -H 'Content-Type: application/json' -d '{\"directory\":\"" +
		info.Slug + "\",\"scopes\":[\"search:read\",\"graph:read\",\"practitioners:read\"],\"practitionerListReason\":\"Our referral app lists the GPs of each clinic.\"}' " +
		base + AccessRequestsPath
	ex := s.exampleValues(ctx, rd, info)
	for _, t := range ref.Tags {
		pt := portalTag{apiTag: t}
		for _, op := range t.Ops {
			po := portalOp{apiOperation: op, Anchor: "op-" + anchor(op.ID)}
			s.example(&po, ex, info, p.Sandbox.Here)
			if po.Example != "" {
				p.Examples++
			}
			pt.Ops = append(pt.Ops, po)
		}
		p.Tags = append(p.Tags, pt)
	}
	var buf bytes.Buffer
	if err := portalTemplates.ExecuteTemplate(&buf, "portal.html", p); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// sandboxOffer says whether the service offers sandbox sign-up, and where.
func (s *Server) sandboxOffer(ctx context.Context, slug string) sandboxOffer {
	demo := s.cfg.SandboxDirectory
	if demo == "" {
		return sandboxOffer{}
	}
	if _, _, err := s.directory(ctx, demo); err != nil {
		return sandboxOffer{}
	}
	return sandboxOffer{Offered: true, Here: demo == slug, Directory: demo,
		SignupPath: SandboxSignupPath(demo), PortalPath: PortalPath(demo)}
}

func (s *Server) signupLimits() SignupLimits {
	if s.cfg.SignupLimits == (SignupLimits{}) {
		return DefaultSignupLimits
	}
	return s.cfg.SignupLimits
}

// exampleValues are real values of a directory that example requests use: the first record of
// each kind the public may read, a category, a collection showing today, an identifier and a word.
type exampleValues struct {
	slug       string
	ids        map[dirsvc.Kind]string
	category   string
	collection string
	identifier [2]string // type and value
	word       string
}

// exampleValues finds the directory's example values. A value it cannot find (a directory without
// collections, say) leaves the operations that need it without an example; a failed read too.
func (s *Server) exampleValues(ctx context.Context, rd dirsvc.DirectoryReader, info *dirsvc.Directory) exampleValues {
	pub := dirsvc.Viewer{Audience: dirsvc.Public}
	ex := exampleValues{slug: info.Slug, ids: map[dirsvc.Kind]string{}}
	if pg, err := rd.Services(ctx, pub, dirsvc.ServiceQuery{Limit: 1}); err == nil && len(pg.Items) > 0 {
		ex.ids[dirsvc.KindService] = pg.Items[0].PublicID
		var v struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(pg.Items[0].Body, &v) == nil {
			ex.word = firstWord(v.Name)
		}
	}
	for _, k := range []dirsvc.Kind{dirsvc.KindOrganisation, dirsvc.KindLocation, dirsvc.KindPractitioner, dirsvc.KindRole} {
		pg, err := rd.Records(ctx, pub, k, "", 1)
		if err != nil || len(pg.Items) == 0 {
			continue
		}
		ex.ids[k] = pg.Items[0].PublicID
		if k == dirsvc.KindOrganisation {
			var v struct {
				Identifiers []struct {
					Type  string `json:"type"`
					Value string `json:"value"`
				} `json:"identifiers"`
			}
			if json.Unmarshal(pg.Items[0].Body, &v) == nil && len(v.Identifiers) > 0 && v.Identifiers[0].Type != "" {
				ex.identifier = [2]string{v.Identifiers[0].Type, v.Identifiers[0].Value}
			}
		}
	}
	if cats, _, err := browseCategories(ctx, rd, pub); err == nil && len(cats) > 0 {
		ex.category = cats[0].Code
	}
	if cols, err := rd.Collections(ctx, dirsvc.Public); err == nil {
		today := dirsvc.Today(s.cfg.Now(), info.TimeZone)
		for _, c := range cols {
			if c.Current(today) {
				ex.collection = c.Slug
				break
			}
		}
	}
	return ex
}

// firstWord returns the first word of a name of at least four letters, lower-case, or "".
func firstWord(name string) string {
	for _, w := range strings.FieldsFunc(name, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') }) {
		if len(w) >= 4 {
			return strings.ToLower(w)
		}
	}
	return ""
}

// fhirTypes are the FHIR resource types of the record kinds.
var fhirTypes = map[dirsvc.Kind]string{dirsvc.KindService: "HealthcareService", dirsvc.KindOrganisation: "Organization",
	dirsvc.KindLocation: "Location", dirsvc.KindPractitioner: "Practitioner", dirsvc.KindRole: "PractitionerRole"}

// recordKinds are the record kinds by the collection segment of their paths.
var recordKinds = map[string]dirsvc.Kind{"services": dirsvc.KindService, "organisations": dirsvc.KindOrganisation,
	"locations": dirsvc.KindLocation, "practitioners": dirsvc.KindPractitioner, "roles": dirsvc.KindRole}

// example gives a read operation its example request against the directory, or says why it has
// none: its path parameters are filled with the directory's values, and it is made anonymous when
// the operation allows that here, else with a sandbox token where the sandbox may call it.
func (s *Server) example(op *portalOp, ex exampleValues, info *dirsvc.Directory, sandboxHere bool) {
	if op.Method != http.MethodGet {
		return
	}
	anonymous := op.Anonymous
	switch op.ID {
	case "listPractitioners":
		anonymous = info.Settings.AnyoneMayListPractitioners
	case "listChanges":
		anonymous = info.Settings.PublicFeed
	case "bulkExport":
		op.NoExample = "It starts an export: see Exports."
		return
	case "getSandboxSignup":
		if !sandboxHere {
			op.NoExample = "Sign-up is offered in the demonstration directory only (see Sandbox)."
			return
		}
	case "downloadExportFile":
		op.NoExample = "Its address, with its signature, comes from the export that made the file."
		return
	}
	path, query, why := ex.fill(op.Path)
	if why != "" {
		op.NoExample = why
		return
	}
	if op.ID == "searchIdentifiers" {
		if ex.identifier[0] == "" {
			op.NoExample = "This directory's records carry no identifier to find."
			return
		}
		query = "system=" + url.QueryEscape(ex.identifier[0]) + "&value=" + url.QueryEscape(ex.identifier[1])
	}
	for _, p := range op.Params {
		if p.Required && p.In == "query" && !strings.Contains("&"+query, "&"+p.Name+"=") {
			if p.Name != "q" || ex.word == "" {
				op.NoExample = "It needs the parameter " + p.Name + "."
				return
			}
			query = joinQuery(query, "q="+url.QueryEscape(ex.word))
		}
	}
	if op.ID == "searchServices" && ex.word != "" {
		query = joinQuery(query, "q="+url.QueryEscape(ex.word))
	}
	if strings.HasPrefix(op.Path, "/v1/d/{dir}/fhir/{type}") && !strings.HasSuffix(op.Path, "{id}") {
		query = joinQuery(query, "_count=5")
	}
	u := s.cfg.BaseURL + path
	if query != "" {
		u += "?" + query
	}
	switch {
	case op.HTML:
		op.ExampleURL = u
		return
	case anonymous:
	case op.Auth != "" || op.Scopes == nil:
		op.NoExample = "It is not for partner clients."
		return
	case !sandboxHere:
		op.NoExample = "It needs a client of this directory with " + scopeList(op.Scopes) + "."
		return
	default:
		for _, sc := range op.Scopes {
			if !slices.Contains(SandboxScopes, sc) {
				op.NoExample = "It needs " + sc + ", which the directory grants on request; the sandbox never has it."
				return
			}
		}
		op.Token = true
	}
	op.ExampleURL = u
	op.Example = "curl " + shellQuote(u)
	if op.Token {
		op.Example = `curl -H "Authorization: Bearer $TOKEN" ` + shellQuote(u)
	}
}

// fill puts the directory's values into a path template. It returns why it cannot when the path
// takes a value that an earlier answer gives (an export's or a webhook's id) or that the directory
// lacks.
func (ex exampleValues) fill(tmpl string) (path, query, why string) {
	orig := strings.Split(tmpl, "/")
	segs := slices.Clone(orig)
	var kind dirsvc.Kind
	for i, seg := range orig {
		if k, ok := recordKinds[seg]; ok {
			kind = k
		}
		if !strings.HasPrefix(seg, "{") {
			continue
		}
		var v string
		switch seg {
		case "{dir}":
			v = ex.slug
		case "{publicId}":
			v = ex.ids[kind]
		case "{code}":
			v = ex.category
		case "{slug}":
			v = ex.collection
		case "{type}":
			for _, k := range []dirsvc.Kind{dirsvc.KindService, dirsvc.KindOrganisation, dirsvc.KindLocation} {
				if ex.ids[k] != "" {
					kind, v = k, fhirTypes[k]
					break
				}
			}
		case "{id}":
			if i > 0 && orig[i-1] == "{type}" && ex.ids[kind] != "" {
				v = fhir.ResourceID(ex.ids[kind])
			} else {
				return "", "", "It takes the id that an earlier answer gives."
			}
		}
		if v == "" {
			return "", "", "This directory has no record it could show."
		}
		segs[i] = url.PathEscape(v)
	}
	return strings.Join(segs, "/"), "", ""
}

func joinQuery(q, add string) string {
	if q == "" {
		return add
	}
	return q + "&" + add
}

func scopeList(scopes []string) string {
	if len(scopes) == 0 {
		return "a token"
	}
	return strings.Join(scopes, " and ")
}

// shellQuote quotes a string for a POSIX shell.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// SignupPage is what a sandbox sign-up page shows: the form (with its values and the message of
// each field that is wrong), a refusal, or the credentials issued.
type SignupPage struct {
	// Directory is the demonstration directory; Offered is false when the service offers no sign-up.
	Directory, DirectoryName string
	Offered                  bool
	CSRF                     string
	Name, Email, Purpose     string
	// Errors are the messages of the fields that are wrong, by field name.
	Errors map[string]string
	// Refusal is why the sign-up was refused as a whole (a limit, the form's token).
	Refusal string
	// Issued is set on the page that shows new credentials.
	Issued *SignupCredentials
}

// SignupCredentials are credentials issued at sign-up, shown once.
type SignupCredentials struct {
	ClientID, Secret string
	Scopes           []string
	Limit            Limits
}

// signupView is what the sign-up templates read: the page, and what every page shows.
type signupView struct {
	SignupPage
	Title         string
	Base          string
	Action        string
	PortalPath    string
	Limits        portalLimits
	TokenEndpoint string
	TokenCommand  string
	MaxName       int
	MaxEmail      int
	MaxPurpose    int
}

// Sign-up field bounds, in characters.
const (
	MaxSignupName    = 200
	MaxSignupEmail   = 254
	MaxSignupPurpose = 1000
)

// WriteSignupPage answers a request of the sandbox sign-up (a primary route) with a page: never
// stored by any cache, as it carries the form's token or new credentials.
func (s *Server) WriteSignupPage(w http.ResponseWriter, r *http.Request, status int, p SignupPage) {
	v := signupView{SignupPage: p, Title: "Sandbox sign-up", Base: s.cfg.BaseURL, TokenEndpoint: s.cfg.BaseURL + TokenPath,
		Limits:  portalLimits{Sandbox: dirsvc.SandboxLimit, Signup: s.signupLimits()},
		MaxName: MaxSignupName, MaxEmail: MaxSignupEmail, MaxPurpose: MaxSignupPurpose}
	if p.Offered {
		v.Action, v.PortalPath = SandboxSignupPath(p.Directory), PortalPath(p.Directory)
	}
	if p.Issued != nil {
		v.Title = "Your sandbox credentials"
		v.TokenCommand = "curl -s -u '" + p.Issued.ClientID + ":" + p.Issued.Secret + "' -d grant_type=client_credentials -d directory=" +
			p.Directory + " " + s.cfg.BaseURL + TokenPath
	}
	var buf bytes.Buffer
	if err := portalTemplates.ExecuteTemplate(&buf, "signup.html", v); err != nil {
		s.error(w, r, err)
		return
	}
	h := w.Header()
	setPageHeaders(h)
	h.Set("Cache-Control", "no-store")
	h[keyContentType] = contentTypeHTML
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// Directory returns the description of a published directory; ErrNotFound for an unknown one.
func (s *Server) Directory(ctx context.Context, slug string) (*dirsvc.Directory, error) {
	_, info, err := s.directory(ctx, slug)
	return info, err
}

// ClientAddr returns the address a request's client is limited by (see clientKey): on a primary,
// the one an edge vouches for.
func (s *Server) ClientAddr(r *http.Request) string { return s.clientKey(r).String() }
