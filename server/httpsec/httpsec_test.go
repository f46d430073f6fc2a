package httpsec

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHostPolicy(t *testing.T) {
	p, err := NewHostPolicy([]string{"Workshop.Example.", "lab.school.test"})
	require.NoError(t, err)
	assert.Equal(t, []string{"lab.school.test", "workshop.example"}, p.Names())
	for host, want := range map[string]bool{
		"127.0.0.1:8080":         true,
		"127.0.0.1":              true,
		"[::1]:8080":             true,
		"192.168.1.10:8080":      true, // an address cannot be rebound
		"localhost:8080":         true,
		"LOCALHOST":              true,
		"app.localhost:8080":     true,
		"workshop.example:8080":  true,
		"WORKSHOP.EXAMPLE.":      true,
		"lab.school.test":        true,
		"evil.example":           false,
		"evil.example:8080":      false,
		"localhost.evil.example": false,
		"example":                false,
		"":                       false,
		"workshop.example.evil":  false,
	} {
		assert.Equal(t, want, p.Allow(host), host)
	}
	for _, bad := range []string{"host:80", "10.0.0.1", "", "a/b", "user@host", "*.example", "a..b", "-a.example", "a b"} {
		_, err := NewHostPolicy([]string{bad})
		assert.Error(t, err, bad)
	}
	_, err = NewHostPolicy([]string{"*.example"})
	assert.ErrorContains(t, err, "not a pattern")
	for _, good := range []string{"ringlab", "lab_1.school.test", "x-1.example"} {
		_, err := NewHostPolicy([]string{good})
		assert.NoError(t, err, good)
	}
}

func TestHandler(t *testing.T) {
	p, err := NewHostPolicy(nil)
	require.NoError(t, err)
	h := Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "nope", http.StatusNotFound) // even an error keeps the headers
	}), p)
	for host, code := range map[string]int{"127.0.0.1:1": http.StatusNotFound, "evil.example": http.StatusMisdirectedRequest} {
		w := httptest.NewRecorder()
		r := httptest.NewRequest("GET", "/", nil)
		r.Host = host
		h.ServeHTTP(w, r)
		assert.Equal(t, code, w.Code, host)
		assert.Equal(t, CSP, w.Header().Get("Content-Security-Policy"), host)
		assert.Contains(t, w.Header().Get("Content-Security-Policy"), "frame-ancestors 'self'")
		assert.Contains(t, w.Header().Get("Content-Security-Policy"), "'wasm-unsafe-eval'", "Ebitengine's engine compiles")
		assert.Equal(t, "SAMEORIGIN", w.Header().Get("X-Frame-Options"), host)
		assert.Equal(t, "nosniff", w.Header().Get("X-Content-Type-Options"), host)
		assert.Equal(t, "no-referrer", w.Header().Get("Referrer-Policy"), host)
	}
	w := httptest.NewRecorder()
	r := httptest.NewRequest("GET", "/", nil)
	r.Host = "evil.example"
	h.ServeHTTP(w, r)
	assert.Contains(t, w.Body.String(), "--public-host")
}
