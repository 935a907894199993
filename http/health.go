package http

import (
	"context"
	"net/http"
	"time"
)

// up answers 200 when the database answers a query within a second, else
// 503: what a load balancer or `make run`'s readiness wait needs.
func (h *Handler) up(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), time.Second)
	defer cancel()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err := h.store.Ping(ctx); err != nil {
		h.log.Warn("health check failed", "err", err)
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte("database unavailable\n"))
		return
	}
	w.Write([]byte("OK\n"))
}
