package serveproc

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as a stand-in for `loremnews serve`: run with
// $SERVEPROC_FAKE set, it behaves as that variable says instead of testing.
func TestMain(m *testing.M) {
	if mode := os.Getenv("SERVEPROC_FAKE"); mode != "" {
		fakeServe(mode, os.Args[1:])
		return
	}
	os.Exit(m.Run())
}

// fakeServe listens on the --addr it is given, prints serve's line, and
// answers /up: "ok" exits 0 on SIGTERM, "stubborn" ignores SIGTERM, "fail"
// exits 3 before listening.
func fakeServe(mode string, args []string) {
	fmt.Fprintf(os.Stderr, "fake serve %s\n", strings.Join(args, " "))
	if mode == "fail" {
		fmt.Fprintln(os.Stderr, "level=ERROR msg=\"cannot open the database\"")
		os.Exit(3)
	}
	if len(args) < 3 || args[0] != "serve" || args[1] != "--addr" {
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", args[2])
	if err != nil {
		os.Exit(1)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM)
	// The address line arrives in two writes, as a buffered writer may send it.
	line := fmt.Sprintf("Lorem News listening on http://%s (fake)\n", ln.Addr())
	os.Stdout.WriteString(line[:10])
	os.Stdout.WriteString(line[10:])
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "OK") }))
	for range sig {
		if mode == "ok" {
			os.Exit(0)
		}
	}
}

// start runs the stand-in in mode. Its log may be read once the process
// has exited: Start serialises the writes, and the exit waits for them.
func start(t *testing.T, mode string) (*Process, *strings.Builder, error) {
	t.Helper()
	t.Setenv("SERVEPROC_FAKE", mode)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	p, err := Start(context.Background(), exe, []string{"--db", "x.sqlite3"}, &log)
	if p != nil {
		t.Cleanup(p.Kill)
	}
	return p, &log, err
}

func TestStartAndStop(t *testing.T) {
	p, log, err := start(t, "ok")
	if err != nil {
		t.Fatalf("%v\n%s", err, log) // the process has exited
	}
	if !strings.HasPrefix(p.URL, "http://127.0.0.1:") || p.Pid() <= 0 {
		t.Fatalf("URL %q, pid %d", p.URL, p.Pid())
	}
	resp, err := http.Get(p.URL + "/up")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("/up: %v", err)
	}
	resp.Body.Close()
	if err := p.Stop(10 * time.Second); err != nil || p.ExitCode() != 0 {
		t.Fatalf("stop: %v, exit code %d", err, p.ExitCode())
	}
	for _, want := range []string{"fake serve serve --addr 127.0.0.1:0 --db x.sqlite3", "listening on " + p.URL} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("the log lacks %q:\n%s", want, log)
		}
	}
}

func TestStartFails(t *testing.T) {
	_, log, err := start(t, "fail")
	if err == nil || !strings.Contains(err.Error(), "exited at start (exit status 3)") {
		t.Fatalf("error %v, want the exit at start", err)
	}
	if !strings.Contains(log.String(), "cannot open the database") {
		t.Errorf("the log lacks the server's error:\n%s", log)
	}
}

func TestStopKillsAStubbornServer(t *testing.T) {
	p, _, err := start(t, "stubborn")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(300 * time.Millisecond); err == nil || !strings.Contains(err.Error(), "was killed") {
		t.Fatalf("stop: %v, want a kill", err)
	}
	select {
	case <-p.exited:
	default:
		t.Fatal("Stop returned with the process still running")
	}
}

func TestListeningURL(t *testing.T) {
	if url, ok := ListeningURL("x\nLorem News listening on http://127.0.0.1:3000 (SQLite split, database d)\n"); !ok || url != "http://127.0.0.1:3000" {
		t.Errorf("%q %v", url, ok)
	}
	if _, ok := ListeningURL("metrics on http://127.0.0.1:9090\n"); ok {
		t.Error("found an address in a line that is not serve's")
	}
}
