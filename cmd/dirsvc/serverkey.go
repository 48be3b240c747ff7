package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/dirsvc/dirsvc/dirdb"
	"github.com/dirsvc/dirsvc/primary"
)

// acceptNewKeyUsage is the help of --accept-new-server-key.
const acceptNewKeyUsage = "go on although partner clients' secrets were made under another server key; they cannot authenticate until their secrets are rotated ($DIRSVC_ACCEPT_NEW_SERVER_KEY)"

// serverKey returns the data folder's server key: $DIRSVC_SERVER_KEY, else data/server.key, else a
// new one, checked against the partner clients of the folder (see primary.LoadServerKey).
func (m *Main) serverKey(ctx context.Context, store *dirdb.Store, acceptNew bool) ([]byte, error) {
	key, err := primary.LoadServerKey(ctx, store, primary.ServerKeyConfig{Path: filepath.Join(m.Data, "server.key"),
		Env: envOr("DIRSVC_SERVER_KEY", ""), AcceptNew: acceptNew, Log: m.Log})
	if errors.Is(err, primary.ErrServerKeyMismatch) {
		return nil, fmt.Errorf("%w; give the key this data folder was used with (docs/operations.md: Disaster recovery), "+
			"or pass --accept-new-server-key to go on without those clients until their secrets are rotated", err)
	}
	return key, err
}

// printServerKey prints the data folder's server key on standard output, for the operator to keep
// in a secret store or give as $DIRSVC_SERVER_KEY. It prints only a key that the folder's partner
// clients were made under.
func (m *Main) printServerKey(ctx context.Context) error {
	store, key, err := m.keyedStore(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	_, err = fmt.Fprintln(m.Stdout, primary.EncodeServerKey(key))
	return err
}

// keyedStore opens the data folder and returns it with its server key, checked against its
// partner clients (the caller closes the store).
func (m *Main) keyedStore(ctx context.Context) (*dirdb.Store, []byte, error) {
	store, err := dirdb.Open(ctx, m.Data)
	if err != nil {
		return nil, nil, err
	}
	key, err := m.serverKey(ctx, store, false)
	if err != nil {
		store.Close()
		return nil, nil, err
	}
	return store, key, nil
}

// signingKeys runs change (when not nil) on the data folder's token signing keys and prints what it
// did, then lists the keys: each key's ID, when it was published, and whether it signs or when it is
// retired.
func (m *Main) signingKeys(ctx context.Context, change func(*primary.Access) (string, error)) error {
	store, key, err := m.keyedStore(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	access, err := primary.NewAccess(ctx, store, key, nil)
	if err != nil {
		return err
	}
	if change != nil {
		done, err := change(access)
		if err != nil {
			return err
		}
		fmt.Fprintln(m.Stdout, done)
	}
	keys, err := access.Keys(ctx)
	if err != nil {
		return err
	}
	for _, k := range keys {
		state := "signs"
		if !k.Signing {
			state = "retired at " + k.RetiresAt.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(m.Stdout, "%s\tpublished %s\t%s\n", k.ID, k.CreatedAt.UTC().Format(time.RFC3339), state)
	}
	return nil
}

// retireKeys retires replaced token signing keys as they fall due, until ctx ends (a primary's
// tokens need no other process for their keys to be retired).
func (m *Main) retireKeys(ctx context.Context, access *primary.Access) {
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if ids, err := access.RetireKeys(ctx); err != nil && ctx.Err() == nil {
			m.Log.Error("retire replaced signing keys", "err", err)
		} else if len(ids) > 0 {
			m.Log.Info("retired replaced signing keys: the tokens they signed have expired", "keys", ids)
		}
	}
}
