package wspeer

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/gorilla/websocket"
)

// bufferSize is the read and write buffer size of a connection; write
// buffers come from a pool shared by all connections, so an idle peer holds
// none.
const bufferSize = 4096

// OriginPolicy decides which browser origins may open a WebSocket or post
// to the API. The zero value allows the same host only.
type OriginPolicy struct {
	allowed map[string]bool // "scheme://host[:port]", lower case
}

// NewOriginPolicy returns a policy that also allows the listed origins,
// each "http://host[:port]" or "https://host[:port]".
func NewOriginPolicy(allowed []string) (OriginPolicy, error) {
	p := OriginPolicy{allowed: map[string]bool{}}
	for _, a := range allowed {
		o, err := normalizeOrigin(a)
		if err != nil {
			return OriginPolicy{}, fmt.Errorf("allowed origin %q: %w", a, err)
		}
		p.allowed[o] = true
	}
	return p, nil
}

func normalizeOrigin(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil {
		return "", err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("want http:// or https://")
	}
	if u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
		return "", fmt.Errorf("want scheme://host[:port] and nothing else")
	}
	return strings.ToLower(u.Scheme + "://" + u.Host), nil
}

// Allow reports whether r may proceed: it has no Origin header (it does not
// come from a browser), its origin is the scheme and host it was sent to
// (http unless the connection is TLS), or its origin is in the allowed
// list.
func (p OriginPolicy) Allow(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil {
		return false
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if strings.EqualFold(u.Scheme, scheme) && strings.EqualFold(u.Host, r.Host) {
		return true
	}
	o, err := normalizeOrigin(origin)
	return err == nil && p.allowed[o]
}

var writeBufferPool sync.Pool

// Upgrader returns a gorilla Upgrader that checks origins with policy (a
// refused origin gets 403).
func Upgrader(policy OriginPolicy) *websocket.Upgrader {
	return &websocket.Upgrader{
		ReadBufferSize:  bufferSize,
		WriteBufferSize: bufferSize,
		WriteBufferPool: &writeBufferPool,
		CheckOrigin:     policy.Allow,
	}
}
