package proto

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The one strict decoder of every message the page, the game and the
// server's sockets take: encoding/json (already in the wasm), with what
// it lets through checked before it runs. Names match a field exactly,
// case included, at any depth ("Type" is not "type"), no object has a
// name twice (encoding/json keeps the last), the text is valid UTF-8
// (encoding/json replaces what is not), and a number that does not fit
// its field is out of range, not a field of the wrong type.

// Type returns the "type" field of a message, checking that the message
// is one JSON object. The name is matched exactly, once: a "Type" is
// another field, and two "type" fields are an error, not the last one
// winning.
func Type(raw []byte) (string, error) {
	if err := checkText(raw); err != nil {
		return "", err
	}
	if err := checkNames(raw, nil); err != nil {
		return "", err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil {
		return "", syntaxError(err)
	} else if tok != json.Delim('{') {
		return "", Errorf(CodeBadJSON, "", "a message must be a JSON object")
	}
	var typ json.RawMessage
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return "", syntaxError(err)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return "", syntaxError(err)
		}
		if tok == "type" {
			typ = v
		}
	}
	if _, err := dec.Token(); err != nil {
		return "", syntaxError(err)
	}
	if len(typ) == 0 || string(typ) == "null" {
		return "", Errorf(CodeMissingType, "type", `a message needs a "type" field`)
	}
	var s string
	if err := json.Unmarshal(typ, &s); err != nil {
		return "", Errorf(CodeBadField, "type", "want a string")
	}
	return s, nil
}

// Strict decodes the JSON object raw into v, a pointer to a struct, and
// fails on unknown fields, names that match a field only in another case,
// names given twice (at any depth), fields of the wrong type, numbers that
// do not fit their field, invalid UTF-8 and trailing data, each an *Error
// naming the field. Absent fields keep their values.
func Strict(raw []byte, v any) error {
	if err := checkText(raw); err != nil {
		return err
	}
	if err := checkNames(raw, reflect.TypeOf(v)); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
			return typeError(te, reflect.TypeOf(v))
		}
		msg := strings.TrimPrefix(err.Error(), "json: ")
		if name, ok := strings.CutPrefix(msg, "unknown field "); ok {
			if u, err := strconv.Unquote(name); err == nil {
				name = u
			}
			return Errorf(CodeUnknownField, name, "this message has no such field")
		}
		return syntaxError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Errorf(CodeBadJSON, "", "trailing data after the message")
	}
	return nil
}

func checkText(raw []byte) error {
	if !utf8.Valid(raw) {
		return Errorf(CodeBadJSON, "", "a message is UTF-8 text")
	}
	return nil
}

func syntaxError(err error) *Error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return Errorf(CodeBadJSON, "", "malformed JSON: unexpected end of input")
	}
	return Errorf(CodeBadJSON, "", "malformed JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
}

// typeError names the field of a value of the wrong type; an integer too
// large for its field is out of range.
func typeError(te *json.UnmarshalTypeError, t reflect.Type) *Error {
	if te.Field == "" {
		return Errorf(CodeBadJSON, "", "a message must be a JSON object")
	}
	field := jsonPath(t, te.Field)
	kind := jsonKind(te.Type)
	if num, ok := strings.CutPrefix(te.Value, "number "); ok && (kind == "a number" || kind == "an integer" && !strings.ContainsAny(num, ".eE")) {
		return Errorf(CodeOutOfRange, field, "%.40s does not fit %s", num, kind)
	}
	return Errorf(CodeBadField, field, "want %s, got %s", kind, te.Value)
}

// jsonPath is encoding/json's path of a field (UnmarshalTypeError.Field)
// as the message spells it: encoding/json names an embedded struct's
// fields after the Go type they come from ("Join.role"), which is no
// part of the JSON. t is the type decoded into.
func jsonPath(t reflect.Type, path string) string {
	var out []string
	for seg := range strings.SplitSeq(path, ".") {
		for t != nil && (t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map) {
			t = t.Elem()
		}
		if t == nil || t.Kind() != reflect.Struct {
			out, t = append(out, seg), nil
			continue
		}
		if f, ok := t.FieldByName(seg); ok && f.Anonymous && f.Tag.Get("json") == "" {
			t = f.Type // an embedded struct's name: not in the JSON
			continue
		}
		out, t = append(out, seg), fieldType(t, seg)
	}
	return strings.Join(out, ".")
}

// fieldType is the type of struct t's field whose JSON name is name (nil
// when none has it).
func fieldType(t reflect.Type, name string) reflect.Type {
	for _, f := range reflect.VisibleFields(t) {
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == name || tag == "" && f.Name == name {
			return f.Type
		}
	}
	return nil
}

var (
	rawType         = reflect.TypeFor[json.RawMessage]()
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
)

// checkNames walks raw's tokens beside t (a pointer to the struct raw
// decodes into; nil takes any names) and refuses a name twice in one
// object and a name no field of its struct has exactly. A syntax error
// is left to the decoder, which says it better.
func checkNames(raw []byte, t reflect.Type) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	err := walk(dec, t, "")
	if e, ok := errors.AsType[*Error](err); ok {
		return e
	}
	return nil
}

// walk checks the value that dec reads next against t, at path.
func walk(dec *json.Decoder, t reflect.Type, path string) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t != nil && (t == rawType || t.Kind() == reflect.Interface || reflect.PointerTo(t).Implements(unmarshalerType)) {
		t = nil // a value of its own making: its names are its own
	}
	switch tok {
	case json.Delim('{'):
		var fields map[string]reflect.Type
		var elem reflect.Type
		if t != nil && t.Kind() == reflect.Struct {
			fields = map[string]reflect.Type{}
			fieldsOf(t, fields)
		} else if t != nil && t.Kind() == reflect.Map {
			elem = t.Elem()
		}
		seen := map[string]bool{}
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return err
			}
			name, _ := tok.(string)
			at := name
			if path != "" {
				at = path + "." + name
			}
			if seen[name] {
				return Errorf(CodeBadJSON, at, "the name %q appears twice in one object", name)
			}
			seen[name] = true
			ft := elem
			if fields != nil {
				var ok bool
				if ft, ok = fields[name]; !ok {
					return Errorf(CodeUnknownField, at, "this message has no such field")
				}
			}
			if err := walk(dec, ft, at); err != nil {
				return err
			}
		}
		_, err := dec.Token()
		return err
	case json.Delim('['):
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for dec.More() {
			if err := walk(dec, elem, path); err != nil {
				return err
			}
		}
		_, err := dec.Token()
		return err
	}
	return nil
}

// fieldsOf adds the JSON names of struct type t's fields and their
// types, those of embedded structs included.
func fieldsOf(t reflect.Type, into map[string]reflect.Type) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			fieldsOf(f.Type, into)
			continue
		}
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		into[name] = f.Type
	}
}

// jsonKind names the JSON value a Go type takes.
func jsonKind(t reflect.Type) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return "another type"
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
	}
	return "an object"
}

// Encode writes a message of type typ whose fields are v's: one JSON
// object, "type" first.
func Encode(typ string, v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding %s: %w", typ, err)
	}
	head := `{"type":` + strconv.Quote(typ)
	if string(b) == "{}" || string(b) == "null" {
		return []byte(head + "}"), nil
	}
	if b[0] != '{' {
		return nil, fmt.Errorf("encoding %s: %T is not an object", typ, v)
	}
	return append([]byte(head+","), b[1:]...), nil
}

// MustEncode is Encode for the server's own messages, plain structs of
// strings, integers, finite floats, maps and raw JSON: failing to encode
// one is a bug.
func MustEncode(typ string, v any) []byte {
	b, err := Encode(typ, v)
	if err != nil {
		panic("proto: " + err.Error())
	}
	return b
}
