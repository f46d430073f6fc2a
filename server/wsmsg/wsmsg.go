// Package wsmsg decodes the JSON messages clients send over ringlab's
// WebSockets strictly and turns every problem into an error message that
// names the field at fault.
package wsmsg

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Error codes sent in error messages; docs/protocol.md lists them.
const (
	CodeBadJSON       = "bad_json"       // not JSON, not an object, or trailing data
	CodeMissingType   = "missing_type"   // no "type" field
	CodeUnknownType   = "unknown_type"   // a type this endpoint does not take
	CodeUnknownField  = "unknown_field"  // a field the message type does not have
	CodeBadField      = "bad_field"      // a field of the wrong JSON type
	CodeOutOfRange    = "out_of_range"   // a value outside its documented range
	CodeBinaryFrame   = "binary_frame"   // a binary frame; messages are text
	CodeRateLimited   = "rate_limited"   // too many messages; this one was dropped
	CodeForbidden     = "forbidden"      // a missing or wrong token
	CodeUnavailable   = "unavailable"    // a resource could not be opened
	CodeLimitExceeded = "limit_exceeded" // a server limit (rooms, students, log) is reached
	CodeNotFound      = "not_found"      // no such room or source
	CodeBadState      = "bad_state"      // a message that is valid but not now
	CodeInternal      = "internal"       // the server's fault
)

// Error is the server's error message, {"type":"error", ...}, and a Go error.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"` // dotted path of the field at fault
}

// Errorf returns an Error with a formatted message.
func Errorf(code, field, format string, args ...any) *Error {
	return &Error{Code: code, Field: field, Message: fmt.Sprintf(format, args...)}
}

func (e *Error) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("%s: field %s: %s", e.Code, e.Field, e.Message)
	}
	return e.Code + ": " + e.Message
}

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
func (e *Error) Encode() []byte {
	return Marshal(struct {
		Type string `json:"type"`
		*Error
	}{"error", e})
}

// Marshal encodes a server message. Server messages are plain structs of
// strings, integers, finite floats, maps and raw JSON, so failing to
// encode one is a bug.
func Marshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("wsmsg: encoding %T: %v", v, err))
	}
	return b
}

// Type returns the "type" field of a client message, checking that the
// message is one JSON object. The name is matched exactly, once: a "Type"
// is another field, and two "type" fields are an error, not the last one
// winning.
func Type(data []byte) (string, error) {
	var env struct {
		Type jsontext.Value `json:"type"`
	}
	if err := jsonv2.Unmarshal(data, &env); err != nil {
		return "", decodeError(err)
	}
	if len(env.Type) == 0 || string(env.Type) == "null" {
		return "", Errorf(CodeMissingType, "type", `a message needs a "type" field`)
	}
	var typ string
	if err := jsonv2.Unmarshal(env.Type, &typ); err != nil {
		return "", Errorf(CodeBadField, "type", "want a string")
	}
	return typ, nil
}

// Strict decodes the JSON object data into v, a pointer to a struct, and
// fails on unknown fields, names that match a field only in another case,
// duplicate names (at any depth), fields of the wrong type, numbers that
// do not fit their field, invalid UTF-8 and trailing data. Absent fields
// keep their values.
func Strict(data []byte, v any) error {
	if err := jsonv2.Unmarshal(data, v, jsonv2.RejectUnknownMembers(true)); err != nil {
		return decodeError(err)
	}
	return nil
}

// decodeError turns a decoding error into an Error naming the field.
func decodeError(err error) error {
	if se, ok := errors.AsType[*jsontext.SyntacticError](err); ok {
		field := dotted(se.JSONPointer)
		switch {
		case errors.Is(se.Err, jsontext.ErrDuplicateName):
			return Errorf(CodeBadJSON, field, "the name %q appears twice in one object", se.JSONPointer.LastToken())
		case strings.Contains(se.Error(), "after top-level value"):
			return Errorf(CodeBadJSON, "", "trailing data after the message")
		}
		if errors.Is(err, io.ErrUnexpectedEOF) || strings.Contains(se.Error(), "unexpected EOF") {
			return Errorf(CodeBadJSON, "", "malformed JSON: unexpected end of input")
		}
		return Errorf(CodeBadJSON, "", "malformed JSON: %v", trimJSON(se))
	}
	if se, ok := errors.AsType[*jsonv2.SemanticError](err); ok {
		field := dotted(se.JSONPointer)
		switch {
		case errors.Is(se.Err, jsonv2.ErrUnknownName):
			return Errorf(CodeUnknownField, field, "this message has no such field (names match exactly, case included)")
		case field == "":
			return Errorf(CodeBadJSON, "", "a message must be a JSON object")
		case se.JSONKind == '0' && (kindOf(se.GoType) == "a number" || kindOf(se.GoType) == "an integer" && !strings.ContainsAny(string(se.JSONValue), ".eE")):
			return Errorf(CodeOutOfRange, field, "%s does not fit %s", se.JSONValue, kindOf(se.GoType))
		case se.JSONKind == '0':
			return Errorf(CodeBadField, field, "want %s, got number %s", kindOf(se.GoType), se.JSONValue)
		}
		return Errorf(CodeBadField, field, "want %s, got %s", kindOf(se.GoType), jsonKindName(se.JSONKind))
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return Errorf(CodeBadJSON, "", "malformed JSON: unexpected end of input")
	}
	return Errorf(CodeBadJSON, "", "%v", trimJSON(err))
}

// dotted turns a JSON Pointer (/cmd/speed) into a dotted path (cmd.speed),
// leaving out array indices (counters/1 is counters).
func dotted(p jsontext.Pointer) string {
	var parts []string
	for tok := range p.Tokens() {
		if tok != "" && strings.Trim(tok, "0123456789") == "" {
			continue
		}
		parts = append(parts, tok)
	}
	return strings.Join(parts, ".")
}

func jsonKindName(k jsontext.Kind) string {
	switch k {
	case 'n':
		return "null"
	case 't', 'f':
		return "bool"
	case '"':
		return "string"
	case '0':
		return "number"
	case '{':
		return "object"
	case '[':
		return "array"
	}
	return "another value"
}

func trimJSON(err error) string {
	return strings.TrimPrefix(strings.TrimPrefix(err.Error(), "jsontext: "), "json: ")
}

// kindOf names the JSON value a Go type takes.
func kindOf(t reflect.Type) string { return jsonKind(t) }

// jsonKind names the JSON value a Go type takes.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "another type"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return "a " + t.Kind().String()
}
