package dirsvc

import (
	"errors"
	"syscall"
)

// A write the storage refuses (a full disk, a quota reached, a disk that fails writes) is no fault of
// the request, nor something a retry at once would change: the client is answered 507 with
// Retry-After and a problem code it can act on, the node says it is unhealthy until its storage
// takes writes again, and an operator sees the cause in the log.

var (
	// ErrInsufficientStorage is the answer to a change the storage refused: nothing was changed.
	ErrInsufficientStorage = &Error{Code: EInsufficientStorage,
		Message: "The service cannot store changes now: its storage is full. Nothing was changed; try again later."}
	// ErrStorageUnconfirmed is the error of an acknowledged change that the primary's replica
	// folder holds but object storage did not confirm in time: the answer says
	// Replication-Pending: object-storage, and the change reaches the bucket when it answers again.
	ErrStorageUnconfirmed = errors.New("object storage did not confirm in time")
)

// SQLite's result codes for a write the storage refused, as the SQLite driver's errors carry them
// (a Code method): SQLITE_FULL for no space left, and SQLITE_IOERR_WRITE for any other failed
// write, which is how SQLite reports a quota reached (EDQUOT).
const (
	sqliteFull       = 13
	sqliteIOErrWrite = 10 | 3<<8
)

// InsufficientStorage reports whether err is a write the storage refused: no space left (ENOSPC), a
// disk quota reached (EDQUOT), or SQLite's "database or disk is full" or failed write.
func InsufficientStorage(err error) bool {
	if err == nil {
		return false
	}
	var e *Error
	if errors.As(err, &e) && e.Code == EInsufficientStorage {
		return true
	}
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return true
	}
	var coded interface{ Code() int }
	if errors.As(err, &coded) {
		c := coded.Code()
		return c&0xff == sqliteFull || c == sqliteIOErrWrite
	}
	return false
}

// NotReplicated returns the answer to a change that was made on the primary but that no replica
// holds, because replicating it failed with cause: insufficient-storage when the storage refused
// it, unavailable otherwise. Either way the change stands, and is replicated once the replica takes
// it (the client need not send it again); the cause is for the log.
func NotReplicated(cause error) *Error {
	if InsufficientStorage(cause) {
		return Errorf(EInsufficientStorage, "The change was made, but the service's storage is full and no replica holds it yet: "+
			"it is copied once there is space, with no need to send it again. Try further changes later.").With(cause)
	}
	return Errorf(EUnavailable, "The change was made, but no replica holds it yet: it is copied once the replica takes it, "+
		"with no need to send it again. Try further changes later.").With(cause)
}
