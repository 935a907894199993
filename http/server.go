package http

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Server serves a handler on a listener with the timeouts a public server
// needs: slow or idle clients cannot hold connections forever. It can also
// hand its clients over to another process (Handoff) without failing a
// request.
type Server struct {
	srv      *http.Server
	draining atomic.Bool

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]struct{} // open connections: accepted, not yet closed or hijacked
}

// NewServer wraps handler in an http.Server with sane timeouts.
func NewServer(handler http.Handler) *Server {
	s := &Server{conns: map[net.Conn]struct{}{}}
	s.srv = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if s.draining.Load() {
				// The connection closes after this response, so the
				// client's next request opens a new one, which the process
				// that took over accepts.
				w.Header().Set("Connection", "close")
			}
			handler.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       15 * time.Second,
		// Longer than the store's writer timeout (5 s) plus rendering, so
		// a queued writer answers before its connection is cut.
		WriteTimeout:   30 * time.Second,
		IdleTimeout:    120 * time.Second,
		MaxHeaderBytes: 64 << 10,
		ConnState:      s.track,
	}
	return s
}

// track keeps the set of open connections.
func (s *Server) track(c net.Conn, state http.ConnState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch state {
	case http.StateNew:
		s.conns[c] = struct{}{}
	case http.StateClosed, http.StateHijacked:
		delete(s.conns, c)
	}
}

// openConns is how many connections are open now.
func (s *Server) openConns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// Serve accepts connections on ln until Shutdown or Handoff; it returns
// nil after either.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	s.ln = ln
	s.mu.Unlock()
	err := s.srv.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) || s.draining.Load() && errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// Shutdown stops accepting connections and waits for requests in flight to
// finish, until ctx ends.
func (s *Server) Shutdown(ctx context.Context) error { return s.srv.Shutdown(ctx) }

// Handoff lets another process that listens on the same socket (one that
// inherited it) take over the clients, then shuts down, without failing a
// request that reached this server: it stops accepting, answers each
// connection's next request with "Connection: close" (so the client opens
// a new connection, which the other process accepts), waits up to grace
// for the connections to close that way, then closes those left idle and
// waits for requests in flight, until ctx ends.
//
// A client that keeps a connection idle through all of grace and sends its
// next request on it just as it closes sees the connection reset, as with
// any server's idle timeout.
func (s *Server) Handoff(ctx context.Context, grace time.Duration) error {
	s.draining.Store(true)
	s.mu.Lock()
	ln := s.ln
	s.mu.Unlock()
	if ln != nil {
		ln.Close()
	}
	deadline := time.Now().Add(grace)
	for s.openConns() > 0 && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
	}
	if err := s.srv.Shutdown(ctx); err != nil && !errors.Is(err, net.ErrClosed) {
		return err
	}
	return nil
}
