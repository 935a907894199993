package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
)

// TestProfilerHidesCommandLine: the profiler serves its profiles but not
// the command line, which may hold --secret-key.
func TestProfilerHidesCommandLine(t *testing.T) {
	h := pprofHandler()
	for _, tc := range []struct {
		path string
		want int
	}{
		{"/debug/pprof/", http.StatusOK},
		{"/debug/pprof/goroutine?debug=1", http.StatusOK},
		{"/debug/pprof/cmdline", http.StatusNotFound},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tc.path, nil))
		if rec.Code != tc.want {
			t.Errorf("GET %s: %d, want %d", tc.path, rec.Code, tc.want)
		}
		if strings.Contains(rec.Body.String(), strings.Join(os.Args, "\x00")) {
			t.Errorf("GET %s shows the command line", tc.path)
		}
	}
}
