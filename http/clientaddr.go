package http

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"
)

// ParseTrustedProxies parses a comma-separated list of CIDR prefixes or
// single addresses (10.0.0.0/8, 127.0.0.1, ::1) for Config.TrustedProxies.
func ParseTrustedProxies(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if p, err := netip.ParsePrefix(f); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(f)
		if err != nil {
			return nil, fmt.Errorf("%q is neither an address nor a CIDR prefix", f)
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// clientAddr is the address of the client a request came from. It is the
// connection's peer unless the peer is a trusted proxy: then the
// X-Forwarded-For chain is read from the right (the hop our proxy added)
// leftwards, skipping trusted proxies, and the first address not trusted
// is the client. Entries left of it were written by the client itself and
// are never believed. An invalid address zero-values.
func (h *Handler) clientAddr(r *http.Request) netip.Addr {
	peer := peerAddr(r)
	if !h.trusted(peer) {
		return peer
	}
	client := peer
	hops := r.Header.Values("X-Forwarded-For")
	for i := len(hops) - 1; i >= 0; i-- {
		parts := strings.Split(hops[i], ",")
		for j := len(parts) - 1; j >= 0; j-- {
			a, ok := parseHop(parts[j])
			if !ok {
				return client // a garbled hop: believe nothing further left
			}
			client = a
			if !h.trusted(a) {
				return a
			}
		}
	}
	return client
}

// peerAddr is the connection's remote address.
func peerAddr(r *http.Request) netip.Addr {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		a, _ := netip.ParseAddr(r.RemoteAddr)
		return a.Unmap()
	}
	return ap.Addr().Unmap()
}

// parseHop reads one X-Forwarded-For entry: an address, possibly with a
// port (some proxies add it).
func parseHop(s string) (netip.Addr, bool) {
	s = strings.TrimSpace(s)
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap().WithZone(""), true
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap().WithZone(""), true
	}
	return netip.Addr{}, false
}

func (h *Handler) trusted(a netip.Addr) bool {
	for _, p := range h.cfg.TrustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// addrGroup is what limits count by: an IPv4 address, or an IPv6 address's
// /64 — one subscriber usually holds a whole /64, so limiting single IPv6
// addresses would give each client 2⁶⁴ tries.
func addrGroup(a netip.Addr) string {
	if !a.IsValid() {
		return "unknown"
	}
	if a = a.Unmap(); a.Is4() {
		return a.String()
	}
	p, _ := a.WithZone("").Prefix(64)
	return p.String()
}
