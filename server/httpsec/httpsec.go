// Package httpsec is what every response of `ringlab serve` carries and
// checks before anything else runs: the Host allow-list that defeats DNS
// rebinding, and the page's hardening headers (Content-Security-Policy
// with frame-ancestors, X-Frame-Options, nosniff, Referrer-Policy).
package httpsec

import (
	"fmt"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strings"
)

// CSP is the page's Content-Security-Policy. Scripts come from the
// server's own files only (no inline script, no eval) with the one
// exception WebAssembly needs to compile ('wasm-unsafe-eval': Ebitengine's
// engine is main.wasm); styles may be inline (the page's colour swatches
// and the panels' own rules; CSS cannot run code); connections go to the
// server (its WebSockets, its files) and, for fetch, to web addresses
// (http, https) that let the page read them (CORS): a lesson loaded from
// its URL (tutorials/README.md); only the server's own pages may
// frame a page (the game's iframe), so the instructor's panel cannot be
// framed by another site.
const CSP = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self' 'unsafe-inline'; " +
	"img-src 'self' data: blob:; connect-src 'self' https: http:; frame-src 'self'; frame-ancestors 'self'; " +
	"object-src 'none'; base-uri 'none'; form-action 'self'"

// SetHeaders sets the hardening headers on h.
func SetHeaders(h http.Header) {
	h.Set("Content-Security-Policy", CSP)
	h.Set("X-Frame-Options", "SAMEORIGIN") // frame-ancestors for browsers that predate it
	h.Set("X-Content-Type-Options", "nosniff")
	// A join link carries the room's id: it goes nowhere else.
	h.Set("Referrer-Policy", "no-referrer")
}

// HostPolicy says which Host headers the server answers. A browser sends
// the name it resolved; a page of evil.example whose name was rebound to
// the server's address sends Host: evil.example, which is not on the list,
// so it can neither read the server's pages nor create rooms. The list
// holds loopback names (localhost and *.localhost, which browsers resolve
// to loopback themselves), every IP literal (a page cannot rebind an
// address: a request to one is that address's origin, which the Origin
// check handles) and the names given with --public-host.
type HostPolicy struct {
	names map[string]bool // lower case, no trailing dot
}

// NewHostPolicy returns a policy that also allows the listed names
// (host names, without a port).
func NewHostPolicy(public []string) (HostPolicy, error) {
	p := HostPolicy{names: map[string]bool{}}
	for _, n := range public {
		c := canonical(n)
		switch {
		case strings.Contains(c, "*"):
			return HostPolicy{}, fmt.Errorf("public host %q: a name, not a pattern: give each name the class opens (--public-host is repeatable)", n)
		case c == "" || net.ParseIP(c) != nil || !hostName.MatchString(c):
			return HostPolicy{}, fmt.Errorf("public host %q: want a host name (letters, digits, - and _ between dots) without a port (addresses are always allowed)", n)
		}
		p.names[c] = true
	}
	return p, nil
}

// hostName is a DNS name as a browser sends it in Host: labels of
// letters, digits, - and _ (which some LAN names have), separated by dots.
var hostName = regexp.MustCompile(`^[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)*$`)

// Names returns the public names, sorted.
func (p HostPolicy) Names() []string {
	out := make([]string, 0, len(p.names))
	for n := range p.names {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

func canonical(host string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(host)), ".")
}

// Allow reports whether a request's Host (name or address, with or
// without a port) is one this server answers.
func (p HostPolicy) Allow(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = canonical(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	switch {
	case host == "":
		return false
	case net.ParseIP(host) != nil:
		return true
	case host == "localhost" || strings.HasSuffix(host, ".localhost"):
		return true
	}
	return p.names[host]
}

// Handler sets the hardening headers on every response of next and
// answers a request whose Host the policy refuses with 421 (Misdirected
// Request) before next sees it.
func Handler(next http.Handler, hosts HostPolicy) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		SetHeaders(w.Header())
		if !hosts.Allow(r.Host) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusMisdirectedRequest)
			fmt.Fprintf(w, "this server does not answer to the name %q: open it by its address or localhost, "+
				"or start it with --public-host NAME for the name the class uses\n", r.Host)
			return
		}
		next.ServeHTTP(w, r)
	})
}
