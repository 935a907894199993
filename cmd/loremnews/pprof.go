package main

import (
	"net/http"
	"net/http/pprof"
)

// pprofHandler serves Go's profiler (serve --pprof), for finding where the
// time goes under load: go tool pprof http://127.0.0.1:3000/debug/pprof/profile?seconds=10
//
// Everything but /debug/pprof/cmdline: the command line can hold
// --secret-key, and whoever holds the key can forge CSRF tokens and device
// cookies. pprof.Index answers that name with 404 (no such profile).
func pprofHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}
