package http

import (
	"net"
	"net/http"
	"testing"
)

// The server counts as busy the connections that are new or working on a
// request, not the idle ones, which is what ShareAccepts waits for; and
// it keeps every open one, idle too, for Handoff.
func TestServerCountsBusyConnections(t *testing.T) {
	s := NewServer(http.NotFoundHandler())
	a, b := &net.TCPConn{}, &net.TCPConn{}
	steps := []struct {
		c          net.Conn
		state      http.ConnState
		busy, open int
	}{
		{a, http.StateNew, 1, 1},
		{b, http.StateNew, 2, 2},
		{a, http.StateActive, 2, 2},
		{a, http.StateIdle, 1, 2},
		{b, http.StateActive, 1, 2},
		{b, http.StateIdle, 0, 2},
		{a, http.StateActive, 1, 2},
		{a, http.StateClosed, 0, 1},
		{b, http.StateHijacked, 0, 0},
	}
	for i, st := range steps {
		s.track(st.c, st.state)
		if got := s.busyConns(); got != st.busy {
			t.Errorf("step %d (%v): %d busy, want %d", i, st.state, got, st.busy)
		}
		if got := s.openConns(); got != st.open {
			t.Errorf("step %d (%v): %d open, want %d", i, st.state, got, st.open)
		}
	}
}
