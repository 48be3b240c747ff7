//go:build unix

package dirdb

import (
	"os"
	"syscall"
)

// lockFolder takes an exclusive lock on a folder (flock, which the system drops when the process
// ends however it ends), held until unlock.
func lockFolder(path string) (unlock func(), err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil // closing the descriptor drops the lock
}

// tryLockFolder is lockFolder; ok is false where another process, or this one, holds the lock.
func tryLockFolder(path string) (unlock func(), ok bool) {
	unlock, err := lockFolder(path)
	return unlock, err == nil
}
