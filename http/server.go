package http

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"
)

// Server serves a handler on a listener with the timeouts a public server
// needs: slow or idle clients cannot hold connections forever.
type Server struct {
	srv *http.Server
}

// NewServer wraps handler in an http.Server with sane timeouts.
func NewServer(handler http.Handler) *Server {
	return &Server{srv: &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       15 * time.Second,
		// Longer than the store's writer timeout (5 s) plus rendering, so
		// a queued writer answers before its connection is cut.
		WriteTimeout:   30 * time.Second,
		IdleTimeout:    120 * time.Second,
		MaxHeaderBytes: 64 << 10,
	}}
}

// Serve accepts connections on ln until Shutdown; it returns nil after a
// clean shutdown.
func (s *Server) Serve(ln net.Listener) error {
	if err := s.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Shutdown stops accepting connections and waits for requests in flight to
// finish, until ctx ends.
func (s *Server) Shutdown(ctx context.Context) error { return s.srv.Shutdown(ctx) }
