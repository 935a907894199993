package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/loremnews/loremnews/load"
)

// headerFlag collects repeated -H "Name: value" flags.
type headerFlag struct{ h http.Header }

func (f *headerFlag) String() string { return "" }

func (f *headerFlag) Set(v string) error {
	name, value, ok := strings.Cut(v, ":")
	if !ok || strings.TrimSpace(name) == "" {
		return fmt.Errorf("header %q is not \"Name: value\"", v)
	}
	f.h.Add(strings.TrimSpace(name), strings.TrimSpace(value))
	return nil
}

func runLoad(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var (
		cfg        load.Config
		headers    = headerFlag{h: http.Header{}}
		body       string
		bodyFile   string
		asJSON     bool
		noProgress bool
		fs         = newFlagSet("load", "loremnews load [flags] URL",
			"Send HTTP load to URL and report throughput, the latency distribution, status codes and errors,\n"+
				"like hey or oha. Closed loop by default (-c workers, each sending its next request when the last\n"+
				"is answered); -q switches to an open loop at a fixed rate, measuring each latency from the\n"+
				"request's scheduled start so server-side queueing is not hidden. Redirects are followed.", stdout)
	)
	fs.IntVar(&cfg.Concurrency, "c", 50, "concurrent workers (open loop: most requests in flight)")
	fs.twin("c", "LOREM_LOAD_CONCURRENCY")
	fs.IntVar(&cfg.Requests, "n", 0, "number of requests (default 200 when -z is not given)")
	fs.twin("n", "LOREM_LOAD_REQUESTS")
	fs.DurationVar(&cfg.Duration, "z", 0, "duration to send requests for, e.g. 10s (in-flight requests then finish)")
	fs.twin("z", "LOREM_LOAD_DURATION")
	fs.Float64Var(&cfg.Rate, "q", 0, "open loop: total requests per second (0: closed loop)")
	fs.twin("q", "LOREM_LOAD_RATE")
	fs.StringVar(&cfg.Method, "m", "GET", "HTTP method")
	fs.twin("m", "LOREM_LOAD_METHOD")
	fs.Var(&headers, "H", `request header "Name: value" (repeatable)`)
	fs.StringVar(&body, "d", "", "request body")
	fs.StringVar(&bodyFile, "D", "", "request body from a file")
	fs.DurationVar(&cfg.Timeout, "t", 20*time.Second, "timeout per request, redirects included")
	fs.twin("t", "LOREM_LOAD_TIMEOUT")
	fs.BoolVar(&cfg.DisableRedirects, "disable-redirects", false, "report 3xx responses instead of following them")
	fs.BoolVar(&cfg.DisableKeepAlives, "disable-keepalive", false, "open a new connection for every request")
	fs.BoolVar(&asJSON, "json", false, "print the result as JSON")
	fs.BoolVar(&noProgress, "no-progress", false, "no live progress line (it is shown only on a terminal anyway)")
	if err := fs.parseArgs(args, 1); err != nil {
		return err
	}
	cfg.URL = fs.positional[0]
	cfg.Header = headers.h
	cfg.Method = strings.ToUpper(cfg.Method)
	if cfg.Requests == 0 && cfg.Duration == 0 {
		cfg.Requests = 200
	}
	if body != "" && bodyFile != "" {
		return &usageError{msg: "give -d or -D, not both", usage: fs.usage}
	}
	cfg.Body = []byte(body)
	if bodyFile != "" {
		b, err := os.ReadFile(bodyFile)
		if err != nil {
			return &usageError{msg: fmt.Sprintf("-D: %v", err), usage: fs.usage}
		}
		cfg.Body = b
	}
	if !noProgress && isTerminal(stderr) {
		cfg.OnProgress = func(p load.Progress) {
			fmt.Fprintf(stderr, "\r%6.1fs  %9d requests  %9.0f req/s  %6d failed ", p.Elapsed.Seconds(), p.Requests, p.RPS, p.Failures)
		}
	}
	res, err := load.Run(ctx, cfg)
	if cfg.OnProgress != nil {
		fmt.Fprint(stderr, "\r\033[K")
	}
	if err != nil {
		return &usageError{msg: strings.TrimPrefix(err.Error(), "load: "), usage: fs.usage}
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res.Summary())
	}
	printResult(stdout, res)
	return nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// printResult writes the familiar hey/oha layout.
func printResult(w io.Writer, r *load.Result) {
	secs := func(d time.Duration) string { return fmt.Sprintf("%.4f secs", d.Seconds()) }
	fmt.Fprintf(w, "\nSummary:\n")
	if r.Rate > 0 {
		fmt.Fprintf(w, "  Open loop at %.0f req/s: latency counts from each request's scheduled start.\n", r.Rate)
	}
	fmt.Fprintf(w, "  Total:\t%s\n  Slowest:\t%s\n  Fastest:\t%s\n  Average:\t%s\n  Requests/sec:\t%.4f\n",
		secs(r.Elapsed), secs(r.Slowest()), secs(r.Fastest()), secs(r.Mean()), r.RequestsPerSec())
	fmt.Fprintf(w, "\n  Total data:\t%d bytes\n", r.Bytes)
	if n := r.Responses(); n > 0 {
		fmt.Fprintf(w, "  Size/request:\t%d bytes\n", r.Bytes/n)
	}

	if buckets := r.LinearBuckets(10); len(buckets) > 0 {
		fmt.Fprintf(w, "\nResponse time histogram:\n")
		var most int64
		for _, b := range buckets {
			most = max(most, b.Count)
		}
		for _, b := range buckets {
			bar := 0
			if most > 0 {
				bar = int(b.Count * 40 / most)
			}
			fmt.Fprintf(w, "  %.3f [%d]\t|%s\n", b.Upper.Seconds(), b.Count, strings.Repeat("■", bar))
		}
		fmt.Fprintf(w, "\nLatency distribution:\n")
		for _, p := range load.StandardPercentiles {
			fmt.Fprintf(w, "  %v%% in %.4f secs\n", p, r.Percentile(p).Seconds())
		}
	}

	fmt.Fprintf(w, "\nStatus code distribution:\n")
	for _, code := range r.SortedStatusCodes() {
		fmt.Fprintf(w, "  [%d]\t%d responses\n", code, r.StatusCodes[code])
	}
	if len(r.Errors) > 0 {
		fmt.Fprintf(w, "\nError distribution:\n")
		kinds := make([]string, 0, len(r.Errors))
		for k := range r.Errors {
			kinds = append(kinds, k)
		}
		sort.Slice(kinds, func(i, j int) bool { return r.Errors[kinds[i]] > r.Errors[kinds[j]] })
		for _, k := range kinds {
			fmt.Fprintf(w, "  [%d]\t%s\n", r.Errors[k], k)
		}
	}
}
