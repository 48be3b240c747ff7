//go:build !unix

package dirdb

// lockFolder locks nothing on this system.
func lockFolder(string) (unlock func(), err error) { return func() {}, nil }

// tryLockFolder never takes a lock on this system, where a build's folder cannot be told from a
// crashed one's: such folders are left for the operator.
func tryLockFolder(string) (unlock func(), ok bool) { return nil, false }
