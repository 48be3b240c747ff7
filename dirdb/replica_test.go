package dirdb_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/dirdb"
)

// TestExclusiveHoldsOnlyItsDirectory changes a directory that is not open: a request for it waits
// until the change is done, a request for another directory does not, and what the change returns
// is passed on.
func TestExclusiveHoldsOnlyItsDirectory(t *testing.T) {
	ctx := context.Background()
	s := MustOpenStore(t)
	MustImport(t, s, readFixture(t))
	other := strings.ReplaceAll(strings.Replace(readFixtureString(t), `"slug":"small"`, `"slug":"other"`, 1), `"small:`, `"other:`)
	MustImport(t, s, []byte(other))
	root := s.Root()
	s.Close()
	s, err := dirdb.Open(ctx, root) // nothing open
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	var done atomic.Bool
	entered, release, read := make(chan struct{}), make(chan struct{}), make(chan bool)
	go s.Exclusive(ctx, "small", func() error {
		close(entered)
		<-release
		done.Store(true)
		return nil
	})
	<-entered
	go func() {
		_, err := s.Reader(ctx, "small")
		read <- err == nil && done.Load() // only once the change is done
	}()
	if _, err := s.Reader(ctx, "other"); err != nil { // not held up
		t.Fatal(err)
	}
	close(release)
	if !<-read {
		t.Error("a read of the directory did not wait for the change")
	}
	// An open directory: the change waits for no reader and fn's error comes back.
	want := errors.New("a failed change")
	if err := s.Exclusive(ctx, "small", func() error { return want }); !errors.Is(err, want) {
		t.Errorf("Exclusive returned %v", err)
	}
	d, err := s.Reader(ctx, "small")
	if err != nil {
		t.Fatal(err)
	}
	if st, err := d.Record(ctx, "svc_gp", dirsvc.Viewer{Audience: dirsvc.Public}); err != nil || st.View == nil {
		t.Errorf("a read after the change: %v", err)
	}
}
