// Package s3test runs an S3 bucket in the test process for tests of replication to object storage,
// with the failures a real store has: it can be taken down (every connection is closed without an
// answer, as by a store that cannot be reached) or hung (every request waits until the store is up
// again, or until its client gives up). An access key can be given a policy, which the store
// enforces as S3 does (see Restrict).
package s3test

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// BucketName is the one bucket a Store holds.
const BucketName = "backups"

// State is what a Store does with requests.
type State int

// The states of a Store.
const (
	Up   State = iota // answers as S3 does
	Down              // closes every connection without an answer
	Hung              // answers nothing until the store is up again or the client gives up
)

// Store is an S3 endpoint in the test process holding the bucket BucketName.
type Store struct {
	// URL is the endpoint's address; use it with path-style addressing.
	URL string

	backend *s3mem.Backend

	mu       sync.Mutex
	state    State
	up       chan struct{}      // closed when the store leaves Hung
	policies map[string]*policy // by access key; a key without one may do anything
}

// New starts a store for the test and sets the environment the S3 client (in the test process and
// in processes it starts) needs to reach it: test credentials, and no CA bundle (this environment's
// cannot be loaded by the client).
func New(tb testing.TB) *Store {
	tb.Helper()
	backend := s3mem.New()
	if err := backend.CreateBucket(BucketName); err != nil {
		tb.Fatal(err)
	}
	s3 := gofakes3.New(backend).Server()
	s := &Store{up: make(chan struct{}), backend: backend}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		state, up := s.state, s.up
		s.mu.Unlock()
		switch state {
		case Down:
			if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
				conn.Close()
			}
			return
		case Hung:
			select {
			case <-up:
			case <-r.Context().Done():
				return
			}
		}
		if !s.allowed(r) {
			denied(w, r)
			return
		}
		s3.ServeHTTP(w, r)
	}))
	tb.Cleanup(func() { s.Set(Up); srv.Close() })
	tb.Setenv("AWS_CA_BUNDLE", "")
	tb.Setenv("AWS_ACCESS_KEY_ID", "test")
	tb.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	s.URL = srv.URL
	return s
}

// Keys returns the key of every object the bucket holds, whoever may read it.
func (s *Store) Keys(tb testing.TB) []string {
	tb.Helper()
	list, err := s.backend.ListBucket(BucketName, nil, gofakes3.ListBucketPage{})
	if err != nil {
		tb.Fatal(err)
	}
	var keys []string
	for _, c := range list.Contents {
		keys = append(keys, c.Key)
	}
	return keys
}

// State returns the store's state.
func (s *Store) State() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state
}

// Set puts the store in a state; requests hung until now go on when it leaves Hung.
func (s *Store) Set(state State) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == Hung && state != Hung {
		close(s.up)
		s.up = make(chan struct{})
	}
	s.state = state
}

// Flags are the command-line flags of the binary that name the store's bucket under a path, with
// a short timeout for every call.
func (s *Store) Flags(path string, timeout time.Duration) []string {
	return []string{"--s3-bucket", BucketName, "--s3-endpoint", s.URL, "--s3-path-style", "--s3-path", path,
		"--s3-timeout", timeout.String()}
}
