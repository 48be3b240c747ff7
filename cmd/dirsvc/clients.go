package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/dirdb"
	"github.com/dirsvc/dirsvc/primary"
)

const clientsUsage = `usage: dirsvc clients [--data DIR] [--accept-new-server-key] OPERATION [flags] [arguments]

The server key ($DIRSVC_SERVER_KEY, else DIR/server.key) must be the one the folder's clients were
made under; --accept-new-server-key goes on with another (a lost key: rotate or revoke each client).

operations:
  create  --name NAME [--sandbox | --partner | --directory SLUG] [grant flags]
          create a client; its secret is printed this once. --sandbox: a partner-organisation client
          with the sandbox grant; --partner: a partner-organisation client (dirp_), granted
          --directory when given; otherwise a client of --directory (dirc_)
  list                                   every client and its grants (never a secret)
  grant   CLIENT --directory SLUG [grant flags]   add or replace a client's grant in a directory
  ungrant CLIENT --directory SLUG        remove a client's grant in a directory
  rotate  CLIENT                         give a client a new secret, printed this once
  revoke  CLIENT                         revoke a client for good
  request CLIENT --directory SLUG --scopes S [--practitioner-list-reason TEXT]
                                         record a client's request for access
  requests                               list access requests
  approve REQUEST [grant flags]          add a request's scopes to the client's grant in the directory
                                         (a new grant takes the grant flags; given flags change a held grant)
  refuse  REQUEST                        refuse a request

grant flags:
  --tier public|professional|partner (default partner)   --agreement TEXT
  --scopes "graph:read search:read"      practitioners:read and leadership:read only when named
  --areas state:nsw,lga:17200            --categories CODE,...   --types service,location,...
  --per-minute N --per-day N             the client's rate limit in the directory
`

// grantFlags are the flags that describe a grant.
type grantFlags struct {
	directory, tier, agreement, scopes, areas, categories, types *string
	perMinute, perDay                                            *int
}

func addGrantFlags(fs *flag.FlagSet) *grantFlags {
	return &grantFlags{
		directory:  fs.String("directory", "", "directory slug"),
		tier:       fs.String("tier", "partner", "tier: public, professional or partner"),
		agreement:  fs.String("agreement", "", "the agreement the grant is made under"),
		scopes:     fs.String("scopes", "search:read graph:read", "scopes, space or comma separated"),
		areas:      fs.String("areas", "", "narrow to these areas (comma separated)"),
		categories: fs.String("categories", "", "narrow to these service categories (comma separated)"),
		types:      fs.String("types", "", "narrow to these record types (comma separated)"),
		perMinute:  fs.Int("per-minute", dirsvc.DefaultPartnerLimit.PerMinute, "requests a minute"),
		perDay:     fs.Int("per-day", dirsvc.DefaultPartnerLimit.PerDay, "requests a day"),
	}
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
	access.SandboxDirectory = envOr("DIRSVC_SANDBOX_DIRECTORY", access.SandboxDirectory)
	return store, access, nil
}

func (m *Main) clients(ctx context.Context, args []string) error {
	fs := m.flags("clients")
	fs.Usage = func() { fmt.Fprint(m.Stderr, clientsUsage) }
	acceptNewKey := fs.Bool("accept-new-server-key", envBool("DIRSVC_ACCEPT_NEW_SERVER_KEY"), acceptNewKeyUsage)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return errors.New("no operation")
	}
	op, rest := fs.Arg(0), fs.Args()[1:]
	store, access, err := m.openAccess(ctx, *acceptNewKey)
	if err != nil {
		return err
	}
	defer store.Close()
	ops := flag.NewFlagSet("dirsvc clients "+op, flag.ContinueOnError)
	ops.SetOutput(m.Stderr)
	gf := addGrantFlags(ops)
	name := ops.String("name", "", "client name (create)")
	sandbox := ops.Bool("sandbox", false, "create a sandbox client (create)")
	partner := ops.Bool("partner", false, "create a partner-organisation client (create)")
	reason := ops.String("practitioner-list-reason", "", "why practitioners are needed in bulk (request)")
	// Flags may follow the operation's argument: parse around it.
	var arg string
	if len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		arg, rest = rest[0], rest[1:]
	}
	if err := ops.Parse(rest); err != nil {
		return err
	}
	if arg == "" && ops.NArg() > 0 {
		arg = ops.Arg(0)
	}
	needArg := func(what string) error {
		if arg == "" {
			return fmt.Errorf("usage: dirsvc clients %s %s", op, what)
		}
		return nil
	}
	set := map[string]bool{}
	ops.Visit(func(f *flag.Flag) { set[f.Name] = true })
	// A grant names a directory this data folder serves: a typo is an error, not a dead grant.
	served := func(slug string) error {
		if _, err := store.Directory(ctx, slug); errors.Is(err, dirsvc.ErrNotFound) {
			return fmt.Errorf("no directory %q in %s", slug, m.Data)
		} else if err != nil {
			return err
		}
		return nil
	}

	switch op {
	case "create":
		nc := primary.NewClient{Name: *name, Sandbox: *sandbox}
		dir := *gf.directory
		if *sandbox {
			dir = access.SandboxDirectory
		}
		if dir != "" {
			if err := served(dir); err != nil {
				return err
			}
		}
		if !*partner && !*sandbox {
			nc.Directory = *gf.directory
			if nc.Directory == "" {
				return errors.New("create: name the client's --directory, or make it --partner or --sandbox")
			}
		}
		if !*sandbox && *gf.directory != "" {
			g, err := gf.grant()
			if err != nil {
				return err
			}
			nc.Grants = []dirsvc.Grant{g}
		}
		c, secret, err := access.CreateClient(ctx, nc)
		if err != nil {
			return err
		}
		return m.printJSON(struct {
			*dirsvc.Client
			Secret string `json:"clientSecret"`
			Note   string `json:"note"`
		}{c, secret, "the secret is shown this once; keep it safe"})
	case "list":
		cs, err := store.Clients(ctx)
		if err != nil {
			return err
		}
		for _, c := range cs {
			if err := m.printJSON(c); err != nil {
				return err
			}
		}
		return nil
	case "grant":
		if err := needArg("CLIENT --directory SLUG [grant flags]"); err != nil {
			return err
		}
		g, err := gf.grant()
		if err != nil {
			return err
		}
		if err := served(g.Directory); err != nil {
			return err
		}
		return access.Grant(ctx, arg, g)
	case "ungrant":
		if err := needArg("CLIENT --directory SLUG"); err != nil {
			return err
		}
		return store.RemoveGrant(ctx, arg, *gf.directory)
	case "rotate":
		if err := needArg("CLIENT"); err != nil {
			return err
		}
		secret, err := access.RotateSecret(ctx, arg)
		if err != nil {
			return err
		}
		return m.printJSON(map[string]string{"clientId": arg, "clientSecret": secret, "note": "the secret is shown this once; keep it safe"})
	case "revoke":
		if err := needArg("CLIENT"); err != nil {
			return err
		}
		return access.Revoke(ctx, arg)
	case "request":
		if err := needArg("CLIENT --directory SLUG --scopes S [--practitioner-list-reason TEXT]"); err != nil {
			return err
		}
		req := &dirsvc.AccessRequest{Client: arg, Directory: *gf.directory, Scopes: splitList(*gf.scopes),
			PractitionerListReason: *reason}
		if err := access.RequestAccess(ctx, req); err != nil {
			return err
		}
		return m.printJSON(req)
	case "requests":
		rs, err := store.AccessRequests(ctx)
		if err != nil {
			return err
		}
		for _, r := range rs {
			if err := m.printJSON(r); err != nil {
				return err
			}
		}
		return nil
	case "approve", "refuse":
		if err := needArg("REQUEST"); err != nil {
			return err
		}
		id, err := strconv.ParseInt(arg, 10, 64)
		if err != nil {
			return fmt.Errorf("%s: %q is not a request number", op, arg)
		}
		if op == "refuse" {
			return store.SetAccessRequestStatus(ctx, id, "refused")
		}
		req, err := store.AccessRequest(ctx, id)
		if err != nil {
			return err
		}
		*gf.directory = req.Directory
		g, err := gf.grant()
		if err != nil {
			return err
		}
		// A request adds its scopes to what the client holds in the directory; a grant flag given
		// here changes that part of the grant, the rest stays as it was.
		c, _, err := store.Client(ctx, req.Client)
		if err != nil {
			return err
		}
		if held := c.Grant(req.Directory); held != nil {
			merged := *held
			merged.Scopes = append(merged.Scopes, req.Scopes...)
			if set["scopes"] {
				merged.Scopes = g.Scopes
			}
			if set["tier"] {
				merged.Tier = g.Tier
			}
			if set["agreement"] {
				merged.Agreement = g.Agreement
			}
			if set["areas"] || set["categories"] || set["types"] {
				merged.Narrowing = g.Narrowing
			}
			if set["per-minute"] || set["per-day"] {
				merged.Limit = g.Limit
			}
			g = merged
		} else if !set["scopes"] {
			g.Scopes = req.Scopes
		}
		g.Scopes = dirsvc.NormalScopes(g.Scopes)
		if err := access.Grant(ctx, req.Client, g); err != nil {
			return err
		}
		return store.SetAccessRequestStatus(ctx, id, "granted")
	}
	fs.Usage()
	return fmt.Errorf("unknown clients operation %q", op)
}

func (m *Main) printJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(m.Stdout, "%s\n", b)
	return err
}

// platform runs a platform operator's switch on a directory, or prints the server key.
func (m *Main) platform(ctx context.Context, args []string) error {
	fs := m.flags("platform")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case fs.NArg() == 1 && fs.Arg(0) == "server-key":
		return m.printServerKey(ctx)
	case fs.NArg() == 1 && fs.Arg(0) == "signing-keys":
		return m.signingKeys(ctx, nil)
	case fs.NArg() == 1 && fs.Arg(0) == "rotate-signing-key":
		return m.signingKeys(ctx, func(a *primary.Access) (string, error) {
			kid, err := a.RotateSigningKey(ctx)
			return "signing key " + kid + " signs from now on; the keys it replaces are retired once the tokens they signed have expired", err
		})
	case fs.NArg() == 2 && fs.Arg(0) == "retire-signing-key":
		return m.signingKeys(ctx, func(a *primary.Access) (string, error) {
			err := a.RetireKey(ctx, fs.Arg(1))
			if errors.Is(err, dirsvc.ErrNotFound) {
				return "", fmt.Errorf("no signing key %s is published (dirsvc platform signing-keys lists them)", fs.Arg(1))
			}
			return "retired signing key " + fs.Arg(1) + ": the tokens it signed are refused from now on, on every node the platform reaches", err
		})
	case fs.NArg() == 3 && fs.Arg(0) == "senior-management" && (fs.Arg(2) == "on" || fs.Arg(2) == "off"):
	default:
		return errors.New("usage: dirsvc platform [--data DIR] senior-management SLUG on|off | server-key | signing-keys | rotate-signing-key | retire-signing-key KID")
	}
	store, err := dirdb.Open(ctx, m.Data)
	if err != nil {
		return err
	}
	defer store.Close()
	return store.SetSeniorManagementAvailable(ctx, fs.Arg(1), fs.Arg(2) == "on")
}
