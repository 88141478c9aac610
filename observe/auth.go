package observe

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
)

// Every endpoint that changes state (POST /v1/send, POST /v1/ask, and any
// added later) goes through authorized: it is off unless Options.Token is
// set, and then asks for that token as a bearer token. Reading is open,
// as /metrics is.

// tokenDigest is the SHA-256 of the configured token; comparing digests
// in constant time leaks neither the token's bytes nor its length.
type tokenDigest struct {
	set bool
	sum [sha256.Size]byte
}

func newTokenDigest(token string) tokenDigest {
	if token == "" {
		return tokenDigest{}
	}
	return tokenDigest{set: true, sum: sha256.Sum256([]byte(token))}
}

func (t tokenDigest) matches(got string) bool {
	sum := sha256.Sum256([]byte(got))
	return subtle.ConstantTimeCompare(sum[:], t.sum[:]) == 1
}

// bearer returns the token of an "Authorization: Bearer TOKEN" header.
func bearer(h string) (string, bool) {
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// authorized guards a state-changing handler: 405 while the node has no
// token (the write endpoints are off, never open by default), 401 without
// the right one.
func (s *server) authorized(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.token.set {
			w.Header().Set("Allow", "") // no method is allowed while they are off
			s.fail(w, http.StatusMethodNotAllowed, "write endpoints are off: start the runner with --http-token-file to enable them")
			return
		}
		if s.hasToken(w, r) {
			h(w, r)
		}
	}
}

// hasToken reports whether r carries the node's token; when it does not,
// it has answered 401.
func (s *server) hasToken(w http.ResponseWriter, r *http.Request) bool {
	if got, ok := bearer(r.Header.Get("Authorization")); ok && s.token.matches(got) {
		return true
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="proctor"`)
	s.fail(w, http.StatusUnauthorized, "missing or wrong bearer token (Authorization: Bearer <token from --http-token-file>)")
	return false
}

// tokenIfSet guards what reveals or costs the node without changing it
// (--pprof): open while the node has no token, as /metrics is, and asking
// for the token once one is set (401 without it).
func (s *server) tokenIfSet(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.token.set || s.hasToken(w, r) {
			h(w, r)
		}
	}
}

// fail answers with a JSON error.
func (s *server) fail(w http.ResponseWriter, code int, msg string) {
	s.json(w, code, map[string]string{"error": msg})
}
