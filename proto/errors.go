package proto

import (
	"errors"
	"fmt"
)

// Error codes: what every refused message says is wrong, on the sockets
// and in the page's messages alike (docs/protocol.md lists them).
const (
	CodeBadJSON       = "bad_json"       // not JSON, not an object, a name twice, invalid UTF-8 or trailing data
	CodeMissingType   = "missing_type"   // no "type" field
	CodeUnknownType   = "unknown_type"   // a type this end does not take
	CodeUnknownField  = "unknown_field"  // a field the message type does not have
	CodeBadField      = "bad_field"      // a field of the wrong JSON type, or missing
	CodeOutOfRange    = "out_of_range"   // a value outside its documented range
	CodeBinaryFrame   = "binary_frame"   // a binary frame; messages are text
	CodeRateLimited   = "rate_limited"   // too many messages; this one was dropped
	CodeForbidden     = "forbidden"      // a missing or wrong token
	CodeUnavailable   = "unavailable"    // a resource could not be opened
	CodeLimitExceeded = "limit_exceeded" // a server limit (rooms, students, log) is reached
	CodeNotFound      = "not_found"      // no such room or source
	CodeBadState      = "bad_state"      // a message that is valid but not now
	CodeVersion       = "version"        // a message of a newer protocol than this end speaks
	CodeFollowing     = "following"      // a following student's page: what would take its world off the room's (detach first)
	CodeReplaying     = "replaying"      // a page replaying its room's log: what would change its world waits until it has caught up
	CodeInternal      = "internal"       // the server's fault
)

// ErrInvalid is wrapped by every Error: a message was refused.
var ErrInvalid = errors.New("invalid message")

// Error is what is wrong with a message: a code, the field at fault
// (dotted, "" for the message as a whole) and a sentence. On a socket it
// is the error message, {"type":"error","code":...} (Encode).
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
}

// Errorf returns an Error with a formatted message.
func Errorf(code, field, format string, args ...any) *Error {
	return &Error{Code: code, Field: field, Message: fmt.Sprintf(format, args...)}
}

// Error is the sentence a person reads: the field, then what is wrong.
func (e *Error) Error() string {
	if e.Field != "" {
		return e.Field + ": " + e.Message
	}
	return e.Message
}

// Unwrap makes every Error an ErrInvalid.
func (e *Error) Unwrap() error { return ErrInvalid }

// WithFieldPrefix returns a copy of e whose Field is prefix.Field (for an
// error found inside a nested object such as a room command's "cmd").
func (e *Error) WithFieldPrefix(prefix string) *Error {
	c := *e
	if c.Field == "" {
		c.Field = prefix
	} else {
		c.Field = prefix + "." + c.Field
	}
	return &c
}

// AsError returns err as an *Error: itself if it is one (or wraps one),
// else an internal error carrying err's text.
func AsError(err error) *Error {
	if e, ok := errors.AsType[*Error](err); ok {
		return e
	}
	return &Error{Code: CodeInternal, Message: err.Error()}
}

// Encode returns the error message's JSON.
func (e *Error) Encode() []byte { return MustEncode(TypeError, e) }
