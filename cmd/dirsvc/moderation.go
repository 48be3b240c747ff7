package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/dirdb"
	"github.com/dirsvc/dirsvc/primary"
	"github.com/dirsvc/dirsvc/primary/federation"
)

// moderation returns the moderation queue of the store, publishing through the record write path.
func moderationQueue(store *dirdb.Store) *federation.Service {
	return federation.New(moderationConfig(store))
}

// moderationConfig is the configuration of a directory's moderation queue on its data folder.
func moderationConfig(store *dirdb.Store) federation.Config {
	return federation.Config{Directories: store, Store: store, Update: primary.RecordUpdater(store)}
}

const moderationUsage = `[--data DIR] --dir SLUG OPERATION ARGS

The queue of forwarded proposals and issues of a directory, and its moderators.

operations:
  list [--status S[,S]] [--for NAME] [--json]   the queue, oldest first (statuses: pending, approving,
                                  accepted, rejected, withdrawn, resolved, no_action); --for: the items
                                  routed to a moderator
  show ID                         one item with its history (JSON)
  accept ID --as NAME             a proposal is taken up: it waits for the approval that publishes it
  approve ID --as NAME            publish an accepted proposal (a steward of the record; a curator for
                                  gated fields): the record gets a new version, the client's receipt
                                  says accepted; a record changed since rejects it as stale
  reject ID --as NAME             refuse a proposal; the record does not change
  resolve ID --as NAME | no-action ID --as NAME   close an issue
  moderators                      list the moderators
  moderator add NAME --curator | --steward ORG    name a curator, or a steward of an organisation
  moderator remove NAME           remove every role of a name

Actions take --note TEXT, kept in the item's history.
`

func (m *Main) moderation(ctx context.Context, args []string) error {
	fs := m.command("moderation", moderationUsage)
	m.dataFlag(fs)
	slug := fs.String("dir", "", "directory slug")
	as := fs.String("as", "", "the moderator who acts")
	note := fs.String("note", "", "a note kept in the item's history")
	status := fs.String("status", "", "list: statuses, comma-separated")
	forName := fs.String("for", "", "list: the items routed to this moderator")
	asJSON := fs.Bool("json", false, "list: print JSON")
	curator := fs.Bool("curator", false, "moderator add: a curator of the directory")
	steward := fs.String("steward", "", "moderator add: a steward of this organisation (public ID)")
	a, err := parseArgs(fs, args, 1, 3)
	if err != nil {
		return err
	}
	if *slug == "" {
		fs.Usage()
		return usagef("moderation: name the directory with --dir")
	}
	store, err := dirdb.Open(ctx, m.Data)
	if err != nil {
		return err
	}
	defer store.Close()
	if _, err := store.Writer(ctx, *slug); err != nil {
		return m.noDirectory(err, *slug)
	}
	svc := moderationQueue(store)
	op := a[0]
	switch {
	case op == "list" && len(a) == 1:
		var statuses []string
		if *status != "" {
			statuses = strings.Split(*status, ",")
		}
		items, err := svc.Queue(ctx, *slug, *forName, statuses...)
		if err != nil {
			return fmt.Errorf("list: %w", err)
		}
		if *asJSON {
			return m.printJSON(primary.ModerationQueue{Items: append([]dirsvc.ForwardedItem{}, items...)})
		}
		tw := tabwriter.NewWriter(m.Stdout, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tKIND\tSTATUS\tRECORD\tFIELDS\tCREATED")
		for _, it := range items {
			var fields []string
			for _, c := range it.Changes {
				fields = append(fields, c.Field)
			}
			what := strings.Join(fields, ",")
			if it.Kind == dirsvc.ForwardedIssue {
				what = it.Category
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", it.ID, it.Kind, it.Status, it.PublicID, what, it.CreatedAt.Format("2006-01-02 15:04"))
		}
		return tw.Flush()
	case op == "show" && len(a) == 2:
		it, err := svc.Item(ctx, *slug, a[1])
		if err != nil {
			return m.moderationError(op, a[1], err)
		}
		return m.printJSON(it)
	case op == "moderators" && len(a) == 1:
		mods, err := store.Moderators(ctx, *slug)
		if err != nil {
			return err
		}
		for _, md := range mods {
			fmt.Fprintf(m.Stdout, "%s\t%s\t%s\n", md.Name, md.Role, md.Organisation)
		}
		return nil
	case op == "moderator" && len(a) == 3 && a[1] == "add":
		md := dirsvc.Moderator{Name: a[2], Role: dirsvc.RoleSteward, Organisation: *steward}
		if *curator == (*steward != "") {
			fs.Usage()
			return usagef("moderation moderator add: give --curator or --steward ORG")
		}
		if *curator {
			md.Role = dirsvc.RoleCurator
		}
		if err := svc.AddModerator(ctx, *slug, md); err != nil {
			return fmt.Errorf("moderator add: %w", err)
		}
		return nil
	case op == "moderator" && len(a) == 3 && a[1] == "remove":
		if err := store.RemoveModerator(ctx, *slug, a[2]); errors.Is(err, dirsvc.ErrNotFound) {
			return fmt.Errorf("moderator remove: %s is no moderator of %s", a[2], *slug)
		} else if err != nil {
			return err
		}
		return nil
	case len(a) == 2 && slices.Contains(federation.Actions, op):
		if *as == "" {
			fs.Usage()
			return usagef("moderation %s: say who acts with --as NAME", op)
		}
		it, err := svc.Act(ctx, *slug, a[1], op, *as, *note)
		if err != nil {
			return m.moderationError(op, a[1], err)
		}
		msg := "the item is " + it.Status
		if it.Reason != "" {
			msg += " (" + it.Reason + ")"
		}
		if it.PublishedVersion > 0 && it.Status == dirsvc.ForwardedAccepted {
			msg += fmt.Sprintf(", published as version %d of %s", it.PublishedVersion, it.PublicID)
		}
		fmt.Fprintln(m.Stdout, msg)
		return nil
	}
	fs.Usage()
	return usagef("moderation: bad operation %q or arguments", op)
}

// moderationError says what went wrong in an operator's words.
func (m *Main) moderationError(op, id string, err error) error {
	if errors.Is(err, dirsvc.ErrNotFound) {
		return fmt.Errorf("%s: no item %s", op, id)
	}
	return fmt.Errorf("%s: %w", op, err)
}
