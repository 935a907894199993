package http

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// LoopbackHosts are the names of this machine that a site listening on a
// loopback address answers to by default.
var LoopbackHosts = []string{"localhost", "127.0.0.1", "::1"}

// ParseAllowedHosts parses a comma-separated list of host names and IP
// addresses (example.com, 192.0.2.10, [2001:db8::1]) for
// Config.AllowedHosts. Ports, schemes and paths are mistakes: a Host header
// is matched without its port.
func ParseAllowedHosts(s string) ([]string, error) {
	var out []string
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		h := strings.TrimSuffix(strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(f, "["), "]")), ".")
		if _, err := netip.ParseAddr(h); err != nil && !validHostName(h) {
			return nil, fmt.Errorf("%q is neither a host name nor an IP address (no scheme, port or path)", f)
		}
		out = append(out, h)
	}
	return out, nil
}

// validHostName reports whether h is a DNS name: letters, digits, '-' and
// '.', not starting with a dot.
func validHostName(h string) bool {
	if h == "" || strings.HasPrefix(h, ".") {
		return false
	}
	for _, r := range h {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '.') {
			return false
		}
	}
	return true
}

// normalHost is a Host header's (or an allowed host's) name as compared:
// without its port, IPv6 brackets or a trailing dot, in lower case.
func normalHost(h string) string {
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	}
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	return strings.TrimSuffix(strings.ToLower(h), ".")
}

// allowHosts answers 400 to a request whose Host is not one of the names
// the site is served as (Django's ALLOWED_HOSTS). Without it, a page on a
// domain an attacker re-points at 127.0.0.1 (DNS rebinding), open in a
// browser on this machine, is same-origin with the site as far as the
// browser knows: it could read the loopback-only routes and drive the
// benchmarking endpoints. GET /up answers any Host, so health checks by
// address work; it tells nothing.
func (h *Handler) allowHosts(next http.Handler) http.Handler {
	allowed := map[string]bool{}
	for _, name := range h.cfg.AllowedHosts {
		allowed[normalHost(name)] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !allowed[normalHost(r.Host)] && r.URL.Path != "/up" {
			h.log.Debug("unknown Host refused", "host", r.Host, "path", r.URL.Path)
			http.Error(w, "Unknown host.", http.StatusBadRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
}
