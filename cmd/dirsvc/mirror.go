package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime/debug"
	"strings"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/dirdb"
	"github.com/dirsvc/dirsvc/primary"
	"github.com/dirsvc/dirsvc/primary/federation"
	"github.com/dirsvc/dirsvc/primary/seal"
	"github.com/dirsvc/dirsvc/primary/webhook"
)

const mirrorUsage = `[--data DIR] OPERATION [arguments] [flags]

A directory (--dir) mirrors records of another directory that speaks this API (the upstream): the
serving primary harvests the upstream's change feed in the background with the client credentials
the upstream gave this directory, and publishes its records here, read-only, with their origin.
dirsvc mirror OPERATION --help lists an operation's flags.

operations:
  add      --dir SLUG --name NAME --upstream URL --upstream-dir SLUG --client-id ID [--audiences LIST]
           add a mirror; the client secret is read from $DIRSVC_MIRROR_CLIENT_SECRET, else from the
           first line of standard input, and never printed
  list     --dir SLUG                    the directory's mirrors and where their harvests stand
  remove   --dir SLUG NAME               remove a mirror and every record it harvested here
  run-once --dir SLUG NAME               harvest a mirror until it has caught up, and say what was done
  forward  --dir SLUG --record ID --field NAME=TEXT... [--message TEXT] [--reference TEXT]
           propose a change of a mirrored record to its upstream; prints the upstream's receipt
  receipt  --dir SLUG [--mirror NAME] ID  read a receipt of a forwarded proposal at the upstream

Outbound requests go only to public internet addresses; --allow-loopback (or
$DIRSVC_MIRROR_ALLOW_LOOPBACK) lets them reach loopback and private addresses, for tests and local setups.
`

// mirrorNameRE is what a mirror's name may be.
var mirrorNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,39}$`)

// mirrorOps are the operations of dirsvc mirror: their arguments and how many they take.
var mirrorOps = map[string]struct {
	args  string
	nargs int
}{
	"add":      {"--dir SLUG --name NAME --upstream URL --upstream-dir SLUG --client-id ID [--audiences LIST]", 0},
	"list":     {"--dir SLUG", 0},
	"remove":   {"--dir SLUG NAME", 1},
	"run-once": {"--dir SLUG NAME", 1},
	"forward":  {"--dir SLUG --record ID --field NAME=TEXT... [--message TEXT] [--reference TEXT]", 0},
	"receipt":  {"--dir SLUG [--mirror NAME] ID", 1},
}

// fieldFlags collects repeated --field NAME=TEXT flags.
type fieldFlags map[string]string

func (f fieldFlags) String() string { return "" }

func (f fieldFlags) Set(s string) error {
	name, text, ok := strings.Cut(s, "=")
	if !ok || name == "" {
		return fmt.Errorf("want NAME=TEXT, not %q", s)
	}
	if _, dup := f[name]; dup {
		return fmt.Errorf("the field %s is given twice", name)
	}
	f[name] = text
	return nil
}

// mirror runs an operation on a directory's mirrors (see mirrorUsage).
func (m *Main) mirror(ctx context.Context, args []string) error {
	fs := m.command("mirror", mirrorUsage)
	m.dataFlag(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return usagef("mirror: name an operation")
	}
	name := fs.Arg(0)
	op, ok := mirrorOps[name]
	if !ok {
		fs.Usage()
		return usagef("unknown mirror operation %q", name)
	}
	ops := m.command("mirror "+name, "[--data DIR] "+op.args)
	m.dataFlag(ops)
	dir := ops.String("dir", "", "the directory (slug) that mirrors (required)")
	allowLoopback := ops.Bool("allow-loopback", envBool("DIRSVC_MIRROR_ALLOW_LOOPBACK"), "let requests reach loopback and private addresses (tests, local setups; $DIRSVC_MIRROR_ALLOW_LOOPBACK)")
	var (
		mirrorName, upstream, upstreamDir, clientID, audiences *string
		record, message, reference                             *string
		fields                                                 = fieldFlags{}
	)
	switch name {
	case "add":
		mirrorName = ops.String("name", "", "the mirror's name: 1 to 40 lower-case letters, digits or hyphens (required)")
		upstream = ops.String("upstream", "", "base URL of the upstream service, e.g. https://directory.example (required)")
		upstreamDir = ops.String("upstream-dir", "", "the upstream directory's slug (required)")
		clientID = ops.String("client-id", "", "the client id the upstream gave this directory (required)")
		audiences = ops.String("audiences", "", "the tiers here that see mirrored records, comma separated (default: the upstream client's tier; every tier when it is public)")
	case "forward":
		record = ops.String("record", "", "public ID of the mirrored record (required)")
		ops.Var(fields, "field", "a text field to change, NAME=TEXT (repeat for several)")
		message = ops.String("message", "", "a message for the upstream's moderators")
		reference = ops.String("reference", "", "this directory's reference for the proposal (default SLUG/ID)")
	case "receipt":
		mirrorName = ops.String("mirror", "", "the mirror whose client forwarded (needed when the directory has several)")
	}
	a, err := parseArgs(ops, fs.Args()[1:], op.nargs, op.nargs)
	if err != nil {
		return err
	}
	if *dir == "" {
		ops.Usage()
		return usagef("mirror %s needs --dir", name)
	}
	store, err := dirdb.Open(ctx, m.Data)
	if err != nil {
		return err
	}
	defer store.Close()
	if _, err := store.Directory(ctx, *dir); err != nil {
		return m.noDirectory(err, *dir)
	}
	guard := webhook.NewGuard(*allowLoopback)
	var sealer *seal.Sealer // of mirrors' client secrets, for the operations that store or present one
	if name != "list" && name != "remove" {
		if sealer, err = m.mirrorSealer(ctx, store); err != nil {
			return err
		}
	}
	switch name {
	case "add":
		return m.mirrorAdd(ctx, store, guard, sealer, *dir, *mirrorName, *upstream, *upstreamDir, *clientID, *audiences)
	case "list":
		ms, err := store.Mirrors(ctx, *dir)
		if err != nil {
			return err
		}
		if ms == nil {
			ms = []dirsvc.Mirror{}
		}
		return m.printJSON(ms)
	case "remove":
		st, err := store.RemoveMirror(ctx, *dir, a[0])
		if err != nil {
			return err
		}
		fmt.Fprintf(m.Stderr, "removed mirror %s of %s and %d records it harvested\n", a[0], *dir, st.Written)
		return nil
	case "run-once":
		// A full harvest gathers up to hundreds of thousands of records in memory and writes them as
		// an import does: collecting half as often is import's trade (see importFile) too.
		debug.SetGCPercent(200)
		h := federation.NewHarvester(federation.MirrorConfig{Store: store, Guard: guard, Sealer: sealer, Log: m.Log})
		st, err := h.RunOnce(ctx, *dir, a[0])
		if err != nil {
			return err
		}
		return m.printJSON(st)
	case "forward":
		return m.mirrorForward(ctx, federation.NewForwarder(guard, sealer), store, *dir, *record, fields, *message, *reference)
	}
	return m.mirrorReceipt(ctx, federation.NewForwarder(guard, sealer), store, *dir, *mirrorName, a[0])
}

// mirrorSealer returns the sealer of mirrors' client secrets, from the data folder's server key.
func (m *Main) mirrorSealer(ctx context.Context, store *dirdb.Store) (*seal.Sealer, error) {
	key, err := m.serverKey(ctx, store, false)
	if err != nil {
		return nil, err
	}
	return seal.New(primary.MirrorSealKey(key))
}

// mirrorAdd checks and stores a new mirror.
func (m *Main) mirrorAdd(ctx context.Context, store *dirdb.Store, g *webhook.Guard, sealer *seal.Sealer, dir, name, upstream, upstreamDir, clientID, audiences string) error {
	switch {
	case !mirrorNameRE.MatchString(name):
		return usagef("mirror add: --name must be 1 to 40 lower-case letters, digits or hyphens")
	case !dirsvc.ValidSlug(upstreamDir):
		return usagef("mirror add: --upstream-dir must be a directory slug")
	case clientID == "" || len(clientID) > 100:
		return usagef("mirror add: --client-id must be 1 to 100 characters")
	}
	up, err := federation.CheckUpstream(ctx, g, upstream)
	if err != nil {
		return usagef("mirror add: --upstream: %v", err)
	}
	var aud dirsvc.Audiences
	for _, t := range splitList(audiences) {
		a, err := dirsvc.ParseAudience(t)
		if err != nil || a == dirsvc.Staff {
			return usagef("mirror add: --audiences: %q is not public, professional or partner", t)
		}
		aud |= dirsvc.AudiencesOf(a)
	}
	secret := os.Getenv("DIRSVC_MIRROR_CLIENT_SECRET")
	if secret == "" {
		if secret, err = readSecretLine(os.Stdin); err != nil {
			return err
		}
	}
	if secret == "" || len(secret) > 200 {
		return usagef("mirror add: the client secret ($DIRSVC_MIRROR_CLIENT_SECRET or standard input) must be 1 to 200 characters")
	}
	mr := dirsvc.Mirror{Name: name, Upstream: up, UpstreamDir: upstreamDir, ClientID: clientID, Audiences: aud,
		CreatedAt: dirsvc.Now()}
	mr.Secret = federation.SealSecret(sealer, &mr, secret)
	err = store.AddMirror(ctx, dir, mr)
	if err != nil {
		return err
	}
	fmt.Fprintf(m.Stderr, "added mirror %s of %s: %s/v1/d/%s; the serving primary harvests it within seconds\n", name, dir, up, upstreamDir)
	return nil
}

// readSecretLine reads a secret from the first line of r.
func readSecretLine(r io.Reader) (string, error) {
	line, err := bufio.NewReader(io.LimitReader(r, 1024)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("read the client secret: %w", err)
	}
	return strings.TrimSpace(line), nil
}

// mirrorFor returns the mirror named, or the directory's only one when name is empty.
func mirrorFor(ctx context.Context, store *dirdb.Store, dir, name string) (*dirsvc.Mirror, error) {
	ms, err := store.Mirrors(ctx, dir)
	if err != nil {
		return nil, err
	}
	for i := range ms {
		if ms[i].Name == name || name == "" && len(ms) == 1 {
			return &ms[i], nil
		}
	}
	if name == "" {
		return nil, usagef("directory %s has %d mirrors: name one with --mirror", dir, len(ms))
	}
	return nil, fmt.Errorf("directory %s has no mirror named %q", dir, name)
}

// mirrorForward proposes a change of a mirrored record to its upstream and prints the receipt.
func (m *Main) mirrorForward(ctx context.Context, f *federation.Forwarder, store *dirdb.Store, dir, record string, fields fieldFlags, message, reference string) error {
	if record == "" || len(fields) == 0 {
		return usagef("mirror forward needs --record and at least one --field NAME=TEXT")
	}
	name, err := store.MirrorOf(ctx, dir, record)
	if err != nil {
		return err
	}
	mr, err := mirrorFor(ctx, store, dir, name)
	if err != nil {
		return err
	}
	if reference == "" {
		reference = dir + "/" + record
	}
	r, err := f.Forward(ctx, mr, federation.ForwardedProposal{PublicID: record,
		Changes: fields, Message: message, Reference: reference})
	if err != nil {
		return err
	}
	return m.printJSON(r)
}

// mirrorReceipt prints a receipt the upstream gave a mirror's client.
func (m *Main) mirrorReceipt(ctx context.Context, f *federation.Forwarder, store *dirdb.Store, dir, name, id string) error {
	mr, err := mirrorFor(ctx, store, dir, name)
	if err != nil {
		return err
	}
	r, err := f.Receipt(ctx, mr, id)
	if err != nil {
		return err
	}
	return m.printJSON(r)
}
