package http

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// admitOne is admit with one slot around next.
func admitOne(next http.Handler) http.Handler {
	h := &Handler{slots: make(chan struct{}, 1), cfg: Config{MaxBodyBytes: 1 << 10}}
	return h.admit(next)
}

// serveAsync serves r on h in a goroutine; the channel is closed once done.
func serveAsync(h http.Handler, r *http.Request) (*httptest.ResponseRecorder, chan struct{}) {
	w, done := httptest.NewRecorder(), make(chan struct{})
	go func() {
		defer close(done)
		h.ServeHTTP(w, r)
	}()
	return w, done
}

func waitFor(t *testing.T, done <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: still waiting after 10 s", what)
	}
}

// TestAdmitFreesTheSlotAtTheFirstByte: a request whose response has begun
// (its page rendered) no longer holds its slot while the rest goes out to
// a client that may read it slowly; the next request is worked on.
func TestAdmitFreesTheSlotAtTheFirstByte(t *testing.T) {
	begun, more := make(chan struct{}), make(chan struct{})
	h := admitOne(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("first "))
		if r.URL.Path == "/slow" {
			close(begun)
			<-more // a response still going out
		}
		w.Write([]byte("rest"))
	}))
	slow, slowDone := serveAsync(h, httptest.NewRequest("GET", "/slow", nil))
	waitFor(t, begun, "the slow response to begin")
	// Until /slow writes its first byte it holds the only slot; after, it
	// must not: /fast is served while /slow's response is unfinished.
	fast, fastDone := serveAsync(h, httptest.NewRequest("GET", "/fast", nil))
	waitFor(t, fastDone, "a request while another's response was going out")
	if got := fast.Body.String(); got != "first rest" {
		t.Fatalf("fast: %q", got)
	}
	close(more)
	waitFor(t, slowDone, "the slow response")
	if got := slow.Body.String(); got != "first rest" {
		t.Fatalf("slow: %q", got)
	}
}

// TestAdmitHoldsTheSlotWhileWorking: until the response begins, the slot is
// held: a second request waits for it.
func TestAdmitHoldsTheSlotWhileWorking(t *testing.T) {
	working, finish := make(chan struct{}), make(chan struct{})
	h := admitOne(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/busy" {
			close(working)
			<-finish
		}
		w.Write([]byte(r.URL.Path))
	}))
	_, busyDone := serveAsync(h, httptest.NewRequest("GET", "/busy", nil))
	waitFor(t, working, "the first request to start")
	_, nextDone := serveAsync(h, httptest.NewRequest("GET", "/next", nil))
	select {
	case <-nextDone:
		t.Fatal("a second request was worked on while the only slot was held")
	case <-time.After(100 * time.Millisecond):
	}
	close(finish)
	waitFor(t, busyDone, "the first request")
	waitFor(t, nextDone, "the second request once the slot was free")
}

// TestAdmitReadsTheBodyFirst: a client sending its body slowly holds no
// slot while it sends; the handler then reads the whole body, or the
// error reading stopped at (a body over MaxBodyBytes: *http.MaxBytesError).
func TestAdmitReadsTheBodyFirst(t *testing.T) {
	bodies := make(chan string, 2)
	h := admitOne(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			bodies <- "too large after " + string(b[:3])
			return
		}
		bodies <- string(b)
	}))
	pr, pw := io.Pipe()
	slowReq := httptest.NewRequest("POST", "/slow", pr)
	_, slowDone := serveAsync(h, slowReq)
	pw.Write([]byte("part one, ")) // and then nothing for a while
	_, fastDone := serveAsync(h, httptest.NewRequest("POST", "/fast", strings.NewReader("fast body")))
	waitFor(t, fastDone, "a request while another's body was arriving")
	if got := <-bodies; got != "fast body" {
		t.Fatalf("fast body: %q", got)
	}
	pw.Write([]byte("part two"))
	pw.Close()
	waitFor(t, slowDone, "the slow body")
	if got := <-bodies; got != "part one, part two" {
		t.Fatalf("slow body: %q", got)
	}
	_, bigDone := serveAsync(h, httptest.NewRequest("POST", "/big", strings.NewReader(strings.Repeat("x", 2<<10))))
	waitFor(t, bigDone, "a body over the limit")
	if got := <-bodies; got != "too large after xxx" {
		t.Fatalf("big body: %q", got)
	}
}
