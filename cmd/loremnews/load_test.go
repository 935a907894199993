package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loremnews/loremnews/load"
)

func TestLoadCommand(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != "POST" || r.Header.Get("X-A") != "1" {
			w.WriteHeader(400)
		}
		io.WriteString(w, "hello")
	}))
	defer srv.Close()

	t.Run("Text", func(t *testing.T) {
		var out bytes.Buffer
		// URL first works too.
		if err := run(context.Background(), []string{"load", srv.URL, "-c", "3", "-n", "30", "-m", "post", "-H", "X-A: 1"}, &out, io.Discard); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"Requests/sec:", "Latency distribution:", "99.9% in", "[200]\t30 responses", "Size/request:\t5 bytes"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("output lacks %q:\n%s", want, out.String())
			}
		}
	})
	t.Run("JSON", func(t *testing.T) {
		var out bytes.Buffer
		// Flags after the URL work too.
		if err := run(context.Background(), []string{"load", "-c", "2", "-n", "10", srv.URL, "-m", "POST", "-H", "X-A: 1", "--json"}, &out, io.Discard); err != nil {
			t.Fatal(err)
		}
		var s load.Summary
		if err := json.Unmarshal(out.Bytes(), &s); err != nil {
			t.Fatal(err)
		}
		if s.Requests != 10 || s.StatusCodes["200"] != 10 || s.BytesTotal != 50 || len(s.Percentiles) == 0 {
			t.Fatalf("summary %+v", s)
		}
	})
	t.Run("UsageErrors", func(t *testing.T) {
		for _, args := range [][]string{
			{"load"},
			{"load", "-c", "0", srv.URL},
			{"load", "-H", "no-colon", srv.URL},
			{"load", "ftp://example/"},
			{"load", srv.URL, "extra"},
		} {
			var stderr bytes.Buffer
			if code := exitCode(run(context.Background(), args, io.Discard, io.Discard), &stderr); code != 2 {
				t.Errorf("%v: exit %d (%s)", args, code, stderr.String())
			}
		}
	})
}

func TestFreshReportDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "2026-11-22-balanced")
	if got := freshReportDir(dir); got != dir {
		t.Fatalf("empty: %s", got)
	}
	for _, d := range []string{dir, dir + "-2"} {
		os.MkdirAll(d, 0o755)
		os.WriteFile(filepath.Join(d, "results.json"), []byte("{}"), 0o644)
	}
	if got := freshReportDir(dir); got != dir+"-3" {
		t.Fatalf("with two reports: %s, want %s-3", got, dir)
	}
}
