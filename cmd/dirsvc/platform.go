package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/dirdb"
	"github.com/dirsvc/dirsvc/primary"
)

const platformUsage = `[--data DIR] OPERATION [arguments]

operations:
  senior-management SLUG on|off   the platform operator's switch for leadership in a directory
  server-key                      print the server key, for a secret store
  signing-keys                    list the token signing keys
  rotate-signing-key              publish a new token signing key; the keys it replaces are retired
                                  once the tokens they signed have expired
  retire-signing-key KID          retire a signing key at once: the tokens it signed are refused
`

// platform runs a platform operator's switch on a directory, prints the server key, or lists or
// changes the token signing keys (see platformUsage).
func (m *Main) platform(ctx context.Context, args []string) error {
	fs := m.command("platform", platformUsage)
	m.dataFlag(fs)
	a, err := parseArgs(fs, args, 1, 3)
	if err != nil {
		return err
	}
	switch {
	case len(a) == 1 && a[0] == "server-key":
		return m.printServerKey(ctx)
	case len(a) == 1 && a[0] == "signing-keys":
		return m.signingKeys(ctx, nil)
	case len(a) == 1 && a[0] == "rotate-signing-key":
		return m.signingKeys(ctx, func(acc *primary.Access) (string, error) {
			kid, err := acc.RotateSigningKey(ctx)
			return "signing key " + kid + " signs from now on; the keys it replaces are retired once the tokens they signed have expired", err
		})
	case len(a) == 2 && a[0] == "retire-signing-key":
		return m.signingKeys(ctx, func(acc *primary.Access) (string, error) {
			err := acc.RetireKey(ctx, a[1])
			if errors.Is(err, dirsvc.ErrNotFound) {
				return "", fmt.Errorf("no signing key %s is published (dirsvc platform signing-keys lists them)", a[1])
			}
			return "retired signing key " + a[1] + ": the tokens it signed are refused from now on, on every node the platform reaches", err
		})
	case len(a) == 3 && a[0] == "senior-management" && (a[2] == "on" || a[2] == "off"):
		return m.seniorManagement(ctx, a[1], a[2] == "on")
	}
	fs.Usage()
	return usagef("platform: bad operation %q or arguments", a[0])
}

// seniorManagement switches the leadership of a directory on or off, and says so.
func (m *Main) seniorManagement(ctx context.Context, slug string, on bool) error {
	store, err := dirdb.Open(ctx, m.Data)
	if err != nil {
		return err
	}
	defer store.Close()
	if err := store.SetSeniorManagementAvailable(ctx, slug, on); err != nil {
		return m.noDirectory(err, slug)
	}
	state := "off"
	if on {
		state = "on"
	}
	_, err = fmt.Fprintf(m.Stdout, "senior management in %s: %s\n", slug, state)
	return err
}
