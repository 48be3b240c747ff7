package dirsvc

import (
	"errors"
	"fmt"
)

// Error codes. Each maps to one problem type and HTTP status at the wire.
const (
	ENotFound       = "not-found-or-hidden" // 404; the same answer for a missing and a hidden record
	EGone           = "gone"                // 410; closed or removed record
	EMoved          = "moved"               // 301; merged record, the survivor is named
	EInvalid        = "invalid-parameter"   // 400
	EInvalidToken   = "invalid-token"       // 401; the access token is malformed, badly signed or expired
	EForbiddenScope = "forbidden-scope"     // 403; a missing scope, or another directory's client
	EForbidden      = "forbidden"           // 403; refused for another reason: a form's token missing or wrong, a sandbox client asking for access
	EMirrored       = "mirrored-record"     // 409
	EConflict       = "conflict"            // 409 on admin operations
	EUnprocessable  = "unprocessable"       // 422; a forwarded proposal of a field that cannot be proposed, or of nothing
	ERateLimited    = "rate-limited"        // 429, with Retry-After
	EInternal       = "internal"            // 500
	EUnavailable    = "unavailable"         // 503, with Retry-After: the primary cannot be reached
	// 507, with Retry-After: the storage refused a write (full, over quota, or failing); see
	// InsufficientStorage.
	EInsufficientStorage = "insufficient-storage"
)

// Error codes of a request body the service does not read at all.
const (
	ETooLarge         = "request-too-large"      // 413; a body past the route's bound
	EUnsupportedMedia = "unsupported-media-type" // 415; a body of a media type the route does not take
)

// Error is a domain error with a code the wire maps to a status. Message is written for the client;
// the cause, if any, is for the log only.
type Error struct {
	Code    string
	Message string
	Param   string // the offending parameter or field, for invalid-parameter
	Target  string // the survivor's public ID, for moved
	cause   error
}

func (e *Error) Error() string {
	if e.cause != nil {
		return e.Message + ": " + e.cause.Error()
	}
	return e.Message
}

// With returns a copy of e with a cause, which is logged but never shown to the client.
func (e *Error) With(cause error) *Error {
	c := *e
	c.cause = cause
	return &c
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.cause }

// Errorf returns an Error with the code and a formatted client message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// InvalidParam returns an invalid-parameter error naming the parameter.
func InvalidParam(param, format string, args ...any) *Error {
	return &Error{Code: EInvalid, Param: param, Message: fmt.Sprintf(format, args...)}
}

// ErrNotFound is the one answer for a record that is missing or hidden from the caller.
var ErrNotFound = &Error{Code: ENotFound, Message: "The record does not exist or is not visible to you."}

// ErrorCode returns the code of err, EInternal for errors that carry none, and "" for nil.
func ErrorCode(err error) string {
	var e *Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &e):
		return e.Code
	default:
		return EInternal
	}
}
