package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/dirdb"
	"github.com/dirsvc/dirsvc/primary"
)

const clientsUsage = `[--data DIR] [--accept-new-server-key] OPERATION [arguments] [flags]

The server key ($DIRSVC_SERVER_KEY, else DIR/server.key) must be the one the folder's clients were
made under; --accept-new-server-key goes on with another (a lost key: rotate or revoke each client).
Flags may follow the operation and its arguments; dirsvc clients OPERATION --help lists them.

operations:
  create  --name NAME [--sandbox | --partner | --directory SLUG] [--jwks FILE [--no-secret]] [grant flags]
          create a client; its secret is printed this once. --sandbox: a partner-organisation client
          with the sandbox grant; --partner: a partner-organisation client (dirp_), granted
          --directory when given; otherwise a client of --directory (dirc_). --jwks: the public keys
          (a JSON Web Key Set of RSA or EC keys) it may authenticate with instead of its secret
          (private_key_jwt, SMART Backend Services); --no-secret: with those keys alone
  list                                   every client and its grants (never a secret)
  keys    CLIENT --jwks FILE | --remove   replace a client's public keys, or remove them
  grant   CLIENT --directory SLUG [grant flags]   add or replace a client's grant in a directory
  ungrant CLIENT --directory SLUG        remove a client's grant in a directory
  rotate  CLIENT                         give a client a new secret, printed this once
  revoke  CLIENT                         revoke a client for good
  request CLIENT --directory SLUG --scopes S [--practitioner-list-reason TEXT] [--jwks FILE]
                                         record a client's request for access (and keys)
  requests                               list access requests
  approve REQUEST [grant flags]          add a request's scopes to the client's grant in the directory
                                         (a new grant takes the grant flags; given flags change a held grant),
                                         and install the keys it carries
  refuse  REQUEST                        refuse a request

grant flags:
  --tier public|professional|partner (default partner)   --agreement TEXT
  --scopes "graph:read search:read"      practitioners:read and leadership:read only when named
  --areas state:nsw,lga:17200            --categories CODE,...   --types service,location,...
  --per-minute N --per-day N             the client's rate limit in the directory
`

// clientOp is an operation of dirsvc clients: its arguments, as its usage names them, how many it
// takes, and the flags it takes besides --data and --accept-new-server-key.
type clientOp struct {
	args  string
	nargs int
	flags clientFlagSet
}

// clientFlagSet names groups of the flags of client operations.
type clientFlagSet int

const (
	withDirectory clientFlagSet = 1 << iota // --directory
	withScopes                              // --scopes
	withGrant                               // the grant flags but --directory and --scopes
	withCreate                              // --name, --sandbox, --partner, --no-secret
	withReason                              // --practitioner-list-reason
	withKeys                                // --jwks
	withRemove                              // --remove
)

// clientOps are the operations of dirsvc clients (described in clientsUsage).
var clientOps = map[string]clientOp{
	"create":   {"--name NAME [--sandbox | --partner | --directory SLUG] [--jwks FILE [--no-secret]] [grant flags]", 0, withCreate | withDirectory | withScopes | withGrant | withKeys},
	"list":     {"", 0, 0},
	"keys":     {"CLIENT --jwks FILE | --remove", 1, withKeys | withRemove},
	"grant":    {"CLIENT --directory SLUG [grant flags]", 1, withDirectory | withScopes | withGrant},
	"ungrant":  {"CLIENT --directory SLUG", 1, withDirectory},
	"rotate":   {"CLIENT", 1, 0},
	"revoke":   {"CLIENT", 1, 0},
	"request":  {"CLIENT --directory SLUG --scopes S [--practitioner-list-reason TEXT] [--jwks FILE]", 1, withDirectory | withScopes | withReason | withKeys},
	"requests": {"", 0, 0},
	"approve":  {"REQUEST [grant flags]", 1, withScopes | withGrant},
	"refuse":   {"REQUEST", 1, 0},
}

// grantFlags are the flags that describe a grant.
type grantFlags struct {
	directory, tier, agreement, scopes, areas, categories, types *string
	perMinute, perDay                                            *int
}

// clientFlags are the flags of a client operation; those it does not take hold their defaults.
type clientFlags struct {
	grantFlags
	name, reason, jwks         *string
	sandbox, partner, noSecret *bool
	remove                     *bool
}

// addClientFlags adds to fs the flags of the groups takes names; the others are made on a set of
// their own, never parsed, so that they hold their defaults.
func addClientFlags(fs *flag.FlagSet, takes clientFlagSet) *clientFlags {
	on := func(group clientFlagSet) *flag.FlagSet {
		if takes&group != 0 {
			return fs
		}
		return flag.NewFlagSet("defaults", flag.ContinueOnError)
	}
	return &clientFlags{
		grantFlags: grantFlags{
			directory:  on(withDirectory).String("directory", "", "directory slug"),
			scopes:     on(withScopes).String("scopes", "search:read graph:read", "scopes, space or comma separated"),
			tier:       on(withGrant).String("tier", "partner", "tier: public, professional or partner"),
			agreement:  on(withGrant).String("agreement", "", "the agreement the grant is made under"),
			areas:      on(withGrant).String("areas", "", "narrow to these areas (comma separated)"),
			categories: on(withGrant).String("categories", "", "narrow to these service categories (comma separated)"),
			types:      on(withGrant).String("types", "", "narrow to these record types (comma separated)"),
			perMinute:  on(withGrant).Int("per-minute", dirsvc.DefaultPartnerLimit.PerMinute, "requests a minute"),
			perDay:     on(withGrant).Int("per-day", dirsvc.DefaultPartnerLimit.PerDay, "requests a day"),
		},
		name:    on(withCreate).String("name", "", "client name"),
		sandbox: on(withCreate).Bool("sandbox", false, "create a sandbox client"),
		partner: on(withCreate).Bool("partner", false, "create a partner-organisation client"),
		reason:  on(withReason).String("practitioner-list-reason", "", "why practitioners are needed in bulk"),
		jwks:    on(withKeys).String("jwks", "", "a file holding the client's public keys as a JSON Web Key Set"),
		noSecret: on(withCreate).Bool("no-secret", false,
			"give the client no secret: it authenticates with its --jwks keys alone"),
		remove: on(withRemove).Bool("remove", false, "remove the client's public keys"),
	}
}

// readJWKS reads the key set of --jwks: nil when the flag is not given.
func readJWKS(path string) (*dirsvc.JWKS, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, dirsvc.MaxJWKSSize+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	keys, err := dirsvc.ParseJWKS(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return keys, nil
}

func splitList(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' })
}

func (g *grantFlags) grant() (dirsvc.Grant, error) {
	tier, err := dirsvc.ParseAudience(*g.tier)
	if err != nil {
		return dirsvc.Grant{}, err
	}
	scopes, err := dirsvc.ParseScopes(strings.Join(splitList(*g.scopes), " "))
	if err != nil {
		return dirsvc.Grant{}, err
	}
	gr := dirsvc.Grant{Directory: *g.directory, Tier: tier, Agreement: *g.agreement, Scopes: scopes,
		Narrowing: dirsvc.Narrowing{Areas: splitList(*g.areas), Categories: splitList(*g.categories)},
		Limit:     dirsvc.RateLimit{PerMinute: *g.perMinute, PerDay: *g.perDay}}
	for _, k := range splitList(*g.types) {
		gr.Narrowing.Kinds = append(gr.Narrowing.Kinds, dirsvc.Kind(k))
	}
	return gr, gr.Validate()
}

// describeGrant says what a grant gives, in one line for an operator.
func describeGrant(g dirsvc.Grant) string {
	s := fmt.Sprintf("%s tier, scopes %s", g.Tier, strings.Join(g.Scopes, " "))
	n := g.Narrowing
	for _, part := range []struct {
		what string
		list []string
	}{{"areas", n.Areas}, {"categories", n.Categories}, {"types", kindNames(n.Kinds)}} {
		if len(part.list) > 0 {
			s += fmt.Sprintf(", %s %s", part.what, strings.Join(part.list, ","))
		}
	}
	return s + fmt.Sprintf(", %d requests a minute and %d a day", g.Limit.PerMinute, g.Limit.PerDay)
}

func kindNames(kinds []dirsvc.Kind) []string {
	var out []string
	for _, k := range kinds {
		out = append(out, string(k))
	}
	return out
}

// openAccess opens the data folder and the client manager over it.
func (m *Main) openAccess(ctx context.Context, acceptNewKey bool) (*dirdb.Store, *primary.Access, error) {
	store, err := dirdb.Open(ctx, m.Data)
	if err != nil {
		return nil, nil, err
	}
	key, err := m.serverKey(ctx, store, acceptNewKey)
	if err != nil {
		store.Close()
		return nil, nil, err
	}
	access, err := primary.NewAccess(ctx, store, key, nil)
	if err != nil {
		store.Close()
		return nil, nil, err
	}
	if access.SandboxDirectory = envOr("DIRSVC_SANDBOX_DIRECTORY", access.SandboxDirectory); access.SandboxDirectory == "none" {
		access.SandboxDirectory = ""
	}
	return store, access, nil
}

// clients runs an operation on the partner clients of the data folder (see clientsUsage).
func (m *Main) clients(ctx context.Context, args []string) error {
	fs := m.command("clients", clientsUsage)
	m.dataFlag(fs)
	acceptNewKey := envBool("DIRSVC_ACCEPT_NEW_SERVER_KEY")
	fs.BoolVar(&acceptNewKey, "accept-new-server-key", acceptNewKey, acceptNewKeyUsage)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return usagef("clients: name an operation")
	}
	name := fs.Arg(0)
	op, ok := clientOps[name]
	if !ok {
		fs.Usage()
		return usagef("unknown clients operation %q", name)
	}
	// The operation's own flag set takes the shared flags too, so that they may follow it.
	ops := m.command("clients "+name, strings.TrimSpace("[--data DIR] [--accept-new-server-key] "+op.args))
	m.dataFlag(ops)
	ops.BoolVar(&acceptNewKey, "accept-new-server-key", acceptNewKey, acceptNewKeyUsage)
	flags := addClientFlags(ops, op.flags)
	a, err := parseArgs(ops, fs.Args()[1:], op.nargs, op.nargs)
	if err != nil {
		return err
	}
	store, access, err := m.openAccess(ctx, acceptNewKey)
	if err != nil {
		return err
	}
	defer store.Close()
	c := &clientsCmd{Main: m, store: store, access: access, flags: flags, set: map[string]bool{}}
	ops.Visit(func(f *flag.Flag) { c.set[f.Name] = true })
	var arg string
	if len(a) > 0 {
		arg = a[0]
	}
	switch name {
	case "create":
		return c.create(ctx)
	case "list":
		return c.list(ctx)
	case "keys":
		return c.keys(ctx, arg)
	case "grant":
		return c.grant(ctx, arg)
	case "ungrant":
		return c.ungrant(ctx, arg)
	case "rotate":
		return c.rotate(ctx, arg)
	case "revoke":
		return c.revoke(ctx, arg)
	case "request":
		return c.request(ctx, arg)
	case "requests":
		return c.requests(ctx)
	case "approve":
		return c.approve(ctx, arg)
	}
	return c.refuse(ctx, arg)
}

// clientsCmd is one dirsvc clients operation on an open data folder: its flags, and which of them
// the command line set.
type clientsCmd struct {
	*Main
	store  *dirdb.Store
	access *primary.Access
	flags  *clientFlags
	set    map[string]bool
}

// platformFile is where the clients are kept, as operators find it.
func (c *clientsCmd) platformFile() string { return dirsvc.FilePath(c.Data, dirsvc.PlatformFile) }

// served checks that this data folder serves the directory a grant names: a typo is an error, not
// a dead grant.
func (c *clientsCmd) served(ctx context.Context, slug string) error {
	_, err := c.store.Directory(ctx, slug)
	return c.noDirectory(err, slug)
}

// clientErr returns err, or, when it is the store's not-found, what is wrong with client id: that
// no such client is in the platform file, or that it is revoked, or (inDir) holds no grant there.
func (c *clientsCmd) clientErr(ctx context.Context, err error, id, inDir string) error {
	if !errors.Is(err, dirsvc.ErrNotFound) {
		return err
	}
	cl, _, cerr := c.store.Client(ctx, id)
	switch {
	case cerr != nil:
		return fmt.Errorf("no client %s in %s (dirsvc clients list lists them)", id, c.platformFile())
	case cl.Revoked:
		return fmt.Errorf("client %s in %s is revoked", id, c.platformFile())
	case inDir != "":
		return fmt.Errorf("client %s holds no grant in directory %s", id, inDir)
	}
	return err
}

// request returns the access request the argument numbers, which must be pending.
func (c *clientsCmd) pendingRequest(ctx context.Context, arg string) (*dirsvc.AccessRequest, error) {
	id, err := strconv.ParseInt(arg, 10, 64)
	if err != nil {
		return nil, usagef("%q is not a request number (dirsvc clients requests lists them)", arg)
	}
	req, err := c.store.AccessRequest(ctx, id)
	if errors.Is(err, dirsvc.ErrNotFound) {
		return nil, fmt.Errorf("no access request %d in %s (dirsvc clients requests lists them)", id, c.platformFile())
	} else if err != nil {
		return nil, err
	}
	if req.Status != "pending" {
		return nil, fmt.Errorf("access request %d is %s already", id, req.Status)
	}
	return req, nil
}

// say prints one line to standard output: what was done.
func (c *clientsCmd) say(format string, args ...any) error {
	_, err := fmt.Fprintf(c.Stdout, format+"\n", args...)
	return err
}

func (c *clientsCmd) create(ctx context.Context) error {
	f := c.flags
	keys, err := readJWKS(*f.jwks)
	if err != nil {
		return err
	}
	if *f.noSecret && keys == nil {
		return usagef("create: --no-secret needs the keys the client authenticates with (--jwks FILE)")
	}
	nc := primary.NewClient{Name: *f.name, Sandbox: *f.sandbox, Keys: keys, NoSecret: *f.noSecret}
	dir := *f.directory
	if *f.sandbox {
		dir = c.access.SandboxDirectory
	}
	if dir != "" {
		if err := c.served(ctx, dir); err != nil {
			return err
		}
	}
	if !*f.partner && !*f.sandbox {
		nc.Directory = *f.directory
		if nc.Directory == "" {
			return usagef("create: name the client's --directory, or make it --partner or --sandbox")
		}
	}
	if !*f.sandbox && *f.directory != "" {
		g, err := f.grant()
		if err != nil {
			return err
		}
		nc.Grants = []dirsvc.Grant{g}
	}
	cl, secret, err := c.access.CreateClient(ctx, nc)
	if err != nil {
		return err
	}
	if secret == "" {
		return c.printJSON(struct {
			*dirsvc.Client
			Note string `json:"note"`
		}{withGrants(cl), "the client has no secret: it authenticates with a JWT signed by one of its keys (private_key_jwt)"})
	}
	return c.printJSON(struct {
		*dirsvc.Client
		Secret string `json:"clientSecret"`
		Note   string `json:"note"`
	}{withGrants(cl), secret, "the secret is shown this once; keep it safe"})
}

// withGrants returns the client with an empty list of grants for none, as the JSON shows it.
func withGrants(c *dirsvc.Client) *dirsvc.Client {
	if c.Grants == nil {
		c.Grants = []dirsvc.Grant{}
	}
	return c
}

func (c *clientsCmd) list(ctx context.Context) error {
	cs, err := c.store.Clients(ctx)
	if err != nil {
		return err
	}
	for i := range cs {
		if err := c.printJSON(withGrants(&cs[i])); err != nil {
			return err
		}
	}
	return nil
}

func (c *clientsCmd) grant(ctx context.Context, id string) error {
	if *c.flags.directory == "" {
		return usagef("grant: name the directory with --directory")
	}
	g, err := c.flags.grant()
	if err != nil {
		return err
	}
	if err := c.served(ctx, g.Directory); err != nil {
		return err
	}
	if err := c.access.Grant(ctx, id, g); err != nil {
		return c.clientErr(ctx, err, id, "")
	}
	return c.say("granted %s access to %s: %s", id, g.Directory, describeGrant(g))
}

// keys replaces a client's public keys, or removes them.
func (c *clientsCmd) keys(ctx context.Context, id string) error {
	f := c.flags
	if (*f.jwks == "") == !*f.remove {
		return usagef("keys: give --jwks FILE or --remove")
	}
	keys, err := readJWKS(*f.jwks)
	if err != nil {
		return err
	}
	if err := c.access.SetKeys(ctx, id, keys); err != nil {
		return c.clientErr(ctx, err, id, "")
	}
	if keys == nil {
		return c.say("removed %s's public keys: its tokens are refused from now on", id)
	}
	return c.say("%s authenticates with the keys %s from now on; the tokens it holds are refused", id, strings.Join(keys.KeyIDs(), " "))
}

func (c *clientsCmd) ungrant(ctx context.Context, id string) error {
	dir := *c.flags.directory
	if dir == "" {
		return usagef("ungrant: name the directory with --directory")
	}
	if err := c.store.RemoveGrant(ctx, id, dir); err != nil {
		return c.clientErr(ctx, err, id, dir)
	}
	return c.say("removed %s's grant in %s: its tokens are refused from now on", id, dir)
}

func (c *clientsCmd) rotate(ctx context.Context, id string) error {
	secret, err := c.access.RotateSecret(ctx, id)
	if err != nil {
		return c.clientErr(ctx, err, id, "")
	}
	return c.printJSON(map[string]string{"clientId": id, "clientSecret": secret, "note": "the secret is shown this once; keep it safe"})
}

func (c *clientsCmd) revoke(ctx context.Context, id string) error {
	if err := c.access.Revoke(ctx, id); err != nil {
		return c.clientErr(ctx, err, id, "")
	}
	return c.say("revoked %s: it gets no new token, and those it holds are refused from now on", id)
}

func (c *clientsCmd) request(ctx context.Context, id string) error {
	keys, err := readJWKS(*c.flags.jwks)
	if err != nil {
		return err
	}
	req := &dirsvc.AccessRequest{Client: id, Directory: *c.flags.directory, Scopes: splitList(*c.flags.scopes),
		PractitionerListReason: *c.flags.reason, Keys: keys}
	if err := c.access.RequestAccess(ctx, req); err != nil {
		return c.clientErr(ctx, err, id, "")
	}
	return c.printJSON(req)
}

func (c *clientsCmd) requests(ctx context.Context) error {
	rs, err := c.store.AccessRequests(ctx)
	if err != nil {
		return err
	}
	for _, r := range rs {
		if err := c.printJSON(r); err != nil {
			return err
		}
	}
	return nil
}

func (c *clientsCmd) refuse(ctx context.Context, arg string) error {
	req, err := c.pendingRequest(ctx, arg)
	if err != nil {
		return err
	}
	if err := c.store.SetAccessRequestStatus(ctx, req.ID, "refused"); err != nil {
		return err
	}
	return c.say("refused access request %d of %s to %s", req.ID, req.Client, req.Directory)
}

// approve adds a request's scopes to what the client holds in the directory; a grant flag given
// here changes that part of the grant, the rest stays as it was.
func (c *clientsCmd) approve(ctx context.Context, arg string) error {
	req, err := c.pendingRequest(ctx, arg)
	if err != nil {
		return err
	}
	*c.flags.directory = req.Directory
	g, err := c.flags.grant()
	if err != nil {
		return err
	}
	cl, _, err := c.store.Client(ctx, req.Client)
	if err != nil {
		return c.clientErr(ctx, err, req.Client, "")
	}
	if held := cl.Grant(req.Directory); held != nil {
		g = c.merge(*held, g, req.Scopes)
	} else if !c.set["scopes"] {
		g.Scopes = req.Scopes
	}
	g.Scopes = dirsvc.NormalScopes(g.Scopes)
	if err := c.access.Grant(ctx, req.Client, g); err != nil {
		return c.clientErr(ctx, err, req.Client, "")
	}
	keys := ""
	if req.Keys != nil {
		if err := c.access.SetKeys(ctx, req.Client, req.Keys); err != nil {
			return c.clientErr(ctx, err, req.Client, "")
		}
		keys = "; it authenticates with the keys " + strings.Join(req.Keys.KeyIDs(), " ")
	}
	if err := c.store.SetAccessRequestStatus(ctx, req.ID, "granted"); err != nil {
		return err
	}
	return c.say("approved access request %d: granted %s access to %s: %s%s", req.ID, req.Client, req.Directory, describeGrant(g), keys)
}

// merge returns the held grant with the requested scopes added, and the parts of the grant the
// command line set (g) in place of what was held.
func (c *clientsCmd) merge(held, g dirsvc.Grant, requested []string) dirsvc.Grant {
	merged := held
	merged.Scopes = append(slices.Clone(held.Scopes), requested...)
	if c.set["scopes"] {
		merged.Scopes = g.Scopes
	}
	if c.set["tier"] {
		merged.Tier = g.Tier
	}
	if c.set["agreement"] {
		merged.Agreement = g.Agreement
	}
	if c.set["areas"] || c.set["categories"] || c.set["types"] {
		merged.Narrowing = g.Narrowing
	}
	if c.set["per-minute"] || c.set["per-day"] {
		merged.Limit = g.Limit
	}
	return merged
}

func (m *Main) printJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(m.Stdout, "%s\n", b)
	return err
}
