package metrics

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Opener opens a source of one kind. arg is what follows "kind:" in a spec
// ("eth0" in "host:eth0"), or "" when the spec has no colon.
type Opener func(arg string) (Source, error)

// Registry maps source kinds ("sim", "host", "lab") to their openers. A kind
// is registered by adding it to the map the server builds.
type Registry map[string]Opener

// ErrUnknownKind is returned by Open for a kind that is not registered.
var ErrUnknownKind = errors.New("unknown source kind")

// Open opens the source a spec names: "kind" or "kind:arg".
func (r Registry) Open(spec string) (Source, error) {
	kind, arg, _ := strings.Cut(spec, ":")
	open, ok := r[kind]
	if !ok {
		return nil, fmt.Errorf("source %q: %w %q (registered: %s)", spec, ErrUnknownKind, kind, strings.Join(r.Kinds(), ", "))
	}
	src, err := open(arg)
	if err != nil {
		return nil, fmt.Errorf("source %q: %w", spec, err)
	}
	return src, nil
}

// Kinds returns the registered kinds, sorted.
func (r Registry) Kinds() []string {
	return slices.Sorted(maps.Keys(r))
}

// Has reports whether the kind of spec is registered.
func (r Registry) Has(spec string) bool {
	kind, _, _ := strings.Cut(spec, ":")
	_, ok := r[kind]
	return ok
}
