package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
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

// loadCommand is a parsed `loremnews load`: the generator's settings and
// how to report.
type loadCommand struct {
	cfg          load.Config
	asJSON       bool
	progress     bool // a live progress line on stderr (a terminal, not turned off)
	maxErrorRate float64
}

func runLoad(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := parseLoadFlags(args, stdout, stderr)
	if err != nil {
		return err
	}
	return c.run(ctx, stdout, stderr)
}

// parseLoadFlags reads the command line (and the flags' environment twins)
// into a loadCommand; any mistake is a usage error.
func parseLoadFlags(args []string, stdout, stderr io.Writer) (loadCommand, error) {
	var (
		c  loadCommand
		in = loadInput{headers: headerFlag{h: http.Header{}}}
		fs = newFlagSet("load", "loremnews load [flags] URL",
			"Send HTTP load to URL and report the success rate, throughput, the latency distribution of successful\n"+
				"responses, status codes and errors, like hey or oha. Closed loop by default (-c workers, each sending\n"+
				"its next request when the last is answered); -q switches to an open loop at a fixed rate, measuring\n"+
				"each latency from the request's scheduled start so server-side queueing is not hidden. A request\n"+
				"succeeds with a 2xx (or a 3xx with --redirect 0). Exits 1 when no request succeeded, or when the\n"+
				"error rate is above --max-error-rate.\n\n"+
				"oha's spellings work for the options both have (-c -n -z -q -m -H -d -D -T -t --redirect\n"+
				"--disable-keepalive --latency-correction --no-tui --json). Not supported: --http2 and\n"+
				"--http-version (HTTP/1.1 only), -x/--proxy (no proxy is used), --insecure (no TLS options),\n"+
				"-A (use -H \"Accept: …\"), -a (use -H \"Authorization: Basic …\"), --burst-delay/--burst-rate (use -q).", stdout)
	)
	c.register(fs, &in)
	if err := fs.parseArgs(args, 1); err != nil {
		return c, err
	}
	c.cfg.URL = fs.positional[0]
	usage := func(format string, args ...any) error {
		return &usageError{msg: fmt.Sprintf(format, args...), cmd: fs.Name()}
	}
	in.terminal = onTerminal(stderr)
	err := c.resolve(in, usage)
	return c, err
}

// loadInput are the flags load reads further into its loadCommand.
type loadInput struct {
	headers           headerFlag
	body, bodyFile    string
	contentType       string
	redirects         int
	latencyCorrection bool // accepted for oha's commands; always on
	noProgress, noTUI bool
	terminal          bool // stderr is a terminal
}

// register adds load's flags, the settings' with their environment twins.
func (c *loadCommand) register(fs *flagSet, in *loadInput) {
	cfg := &c.cfg
	fs.IntVar(&cfg.Concurrency, "c", 50, "concurrent workers (open loop: most requests in flight)")
	fs.twin("c", "LOREM_LOAD_CONCURRENCY")
	fs.IntVar(&cfg.Requests, "n", 0, "number of requests (default 200 when -z is not given)")
	fs.twin("n", "LOREM_LOAD_REQUESTS")
	fs.DurationVar(&cfg.Duration, "z", 0, "duration to send requests for, e.g. 10s (in-flight requests then finish)")
	fs.twin("z", "LOREM_LOAD_DURATION")
	fs.Float64Var(&cfg.Rate, "q", 0, "open loop: total requests per second (0: closed loop)")
	fs.twin("q", "LOREM_LOAD_RATE")
	fs.StringVar(&cfg.Method, "m", "GET", "HTTP `METHOD`")
	fs.twin("m", "LOREM_LOAD_METHOD")
	fs.Var(&in.headers, "H", "request `HEADER` \"Name: value\" (repeatable)")
	fs.StringVar(&in.body, "d", "", "request `BODY`")
	fs.StringVar(&in.bodyFile, "D", "", "request body from a `FILE`")
	fs.StringVar(&in.contentType, "T", "", "Content-Type header of the request (a media `TYPE`)")
	fs.DurationVar(&cfg.Timeout, "t", 20*time.Second, "timeout per request, redirects included")
	fs.twin("t", "LOREM_LOAD_TIMEOUT")
	fs.IntVar(&in.redirects, "redirect", 10, "redirects followed per request; 0: report the 3xx itself (then it counts as a success)")
	fs.BoolVar(&cfg.DisableRedirects, "disable-redirects", false, "the same as --redirect 0")
	fs.BoolVar(&cfg.DisableKeepAlives, "disable-keepalive", false, "open a new connection for every request")
	fs.BoolVar(&in.latencyCorrection, "latency-correction", false, "accepted for oha's commands: with -q, latencies always count from each request's scheduled start")
	fs.Float64Var(&c.maxErrorRate, "max-error-rate", 1, "exit 1 if more than this share (0–1) of requests failed, e.g. 0.01")
	fs.twin("max-error-rate", "LOREM_LOAD_MAX_ERROR_RATE")
	fs.BoolVar(&c.asJSON, "json", false, "print the result as JSON")
	fs.BoolVar(&in.noProgress, "no-progress", false, "no live progress bar (it is shown only on a terminal anyway)")
	fs.BoolVar(&in.noTUI, "no-tui", false, "the same as --no-progress (oha's spelling)")
}

// resolve checks the flags against each other and turns in into c's
// settings; the error is a usage error naming the flag.
func (c *loadCommand) resolve(in loadInput, usage func(format string, args ...any) error) error {
	cfg := &c.cfg
	cfg.GiveUpAfter = giveUpAfter
	cfg.Header = in.headers.h
	cfg.Method = strings.ToUpper(cfg.Method)
	if in.contentType != "" {
		cfg.Header.Set("Content-Type", in.contentType)
	}
	switch {
	case in.redirects < 0:
		return usage("--redirect %d: want 0 or more", in.redirects)
	case in.redirects == 0:
		cfg.DisableRedirects = true
	default:
		cfg.MaxRedirects = in.redirects
	}
	if c.maxErrorRate < 0 || c.maxErrorRate > 1 {
		return usage("--max-error-rate %v: want a share between 0 and 1", c.maxErrorRate)
	}
	if cfg.Requests == 0 && cfg.Duration == 0 {
		cfg.Requests = 200
	}
	if in.body != "" && in.bodyFile != "" {
		return usage("give -d or -D, not both")
	}
	cfg.Body = []byte(in.body)
	if in.bodyFile != "" {
		b, err := os.ReadFile(in.bodyFile)
		if err != nil {
			return usage("-D: %v", err)
		}
		cfg.Body = b
	}
	c.progress = !in.noProgress && !in.noTUI && in.terminal
	return nil
}

// run sends the load and reports it.
func (c loadCommand) run(ctx context.Context, stdout, stderr io.Writer) error {
	cfg := c.cfg
	if c.progress {
		cfg.OnProgress = func(p load.Progress) { fmt.Fprint(stderr, "\r"+progressLine(cfg, p)+"\033[K") }
	}
	res, err := load.Run(ctx, cfg)
	if cfg.OnProgress != nil {
		fmt.Fprint(stderr, "\r\033[K")
	}
	if err != nil {
		return &usageError{msg: strings.TrimPrefix(err.Error(), "load: "), cmd: "load"}
	}
	if c.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res.Summary()); err != nil {
			return err
		}
	} else {
		printResult(stdout, res)
	}
	return verdict(res, c.maxErrorRate)
}

// giveUpAfter is how long load keeps trying a URL that refuses every
// connection. A closed port is the usual mistake (the server is not
// running, or runs on another port); waiting out a -z window of minutes to
// report it helps no one, and a server that is starting answers within it.
const giveUpAfter = time.Second

// verdict is the error the command exits with: none when enough requests
// succeeded, else one line that says what happened and, for the usual
// mistakes, what to try.
func verdict(r *load.Result, maxErrorRate float64) error {
	if r.Successes() == 0 {
		return fmt.Errorf("no request succeeded: %d of %d failed (%s)%s", r.Failures, r.Requests, failureSummary(r), failureHint(r))
	}
	if rate := 1 - r.SuccessRate(); rate > maxErrorRate {
		return fmt.Errorf("error rate %.2f %% (%d of %d) is above --max-error-rate %.2f %% (%s)",
			100*rate, r.Failures, r.Requests, 100*maxErrorRate, failureSummary(r))
	}
	return nil
}

// failureHint suggests the likely fix when no request succeeded: a server
// that refused every connection is not listening there; one that answered
// every request 404 or 405 does not serve that method at that URL (the
// benchmarking endpoints take POST).
func failureHint(r *load.Result) string {
	if r.GaveUp {
		return fmt.Sprintf("; stopped after %s: is the server running, on this port?", giveUpAfter)
	}
	if r.Answered == 0 || r.Answered != r.StatusCodes[http.StatusNotFound]+r.StatusCodes[http.StatusMethodNotAllowed] {
		return ""
	}
	if r.Method != http.MethodPost {
		return "; did you mean -m POST?"
	}
	return ""
}

// failureSummary names the failures: "20× connection refused", "30× 404".
func failureSummary(r *load.Result) string {
	var parts []string
	for _, code := range r.SortedStatusCodes() {
		if !r.IsSuccess(code) {
			parts = append(parts, fmt.Sprintf("%d× status %d", r.StatusCodes[code], code))
		}
	}
	kinds := make([]string, 0, len(r.Errors))
	for k := range r.Errors {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		parts = append(parts, fmt.Sprintf("%d× %s", r.Errors[k], k))
	}
	return strings.Join(parts, ", ")
}

// progressLine is the live line on a terminal, like oha's: a bar, done of
// total (requests for -n, time for -z), elapsed and remaining, req/s and errors.
func progressLine(cfg load.Config, p load.Progress) string {
	var frac float64
	var done string
	var remaining time.Duration
	switch {
	case cfg.Requests > 0:
		frac = float64(p.Requests) / float64(cfg.Requests)
		done = fmt.Sprintf("%d/%d", p.Requests, cfg.Requests)
		if p.Requests > 0 {
			remaining = time.Duration(float64(p.Elapsed) * float64(int64(cfg.Requests)-p.Requests) / float64(p.Requests))
		}
	default:
		frac = p.Elapsed.Seconds() / cfg.Duration.Seconds()
		done = fmt.Sprintf("%d requests", p.Requests)
		remaining = cfg.Duration - p.Elapsed
	}
	frac = min(max(frac, 0), 1)
	const width = 30
	filled := int(frac * width)
	return fmt.Sprintf("[%s%s] %3.0f%%  %s  %s elapsed, %s left  %.0f req/s  %d errors",
		strings.Repeat("█", filled), strings.Repeat("░", width-filled), 100*frac, done,
		p.Elapsed.Round(100*time.Millisecond), max(remaining, 0).Round(100*time.Millisecond), p.RPS, p.Failures)
}

// printResult writes the familiar hey/oha layout. Every latency is in the
// unit that suits its value (µs, ms or s), as oha shows them.
func printResult(w io.Writer, r *load.Result) {
	fmt.Fprintf(w, "\nSummary:\n")
	fmt.Fprintf(w, "  Success rate:\t%.2f%% (%d of %d requests)\n", 100*r.SuccessRate(), r.Successes(), r.Requests)
	fmt.Fprintf(w, "  Total:\t%s\n", fmtDuration(r.Elapsed))
	if r.Measured() > 0 {
		fmt.Fprintf(w, "  Slowest:\t%s\n  Fastest:\t%s\n  Average:\t%s\n", fmtDuration(r.Slowest()), fmtDuration(r.Fastest()), fmtDuration(r.Mean()))
	} else {
		fmt.Fprintf(w, "  Latency:\tnone measured: no request succeeded\n")
	}
	fmt.Fprintf(w, "  Successful/sec:\t%.2f\n  Requests/sec:\t%.2f (every finished request, failures included)\n", r.SuccessesPerSec(), r.RequestsPerSec())
	if r.Rate > 0 {
		fmt.Fprintf(w, "\nOpen loop (latency counts from each request's scheduled start):\n")
		fmt.Fprintf(w, "  Configured rate:\t%s req/s\n", strconv.FormatFloat(r.Rate, 'f', -1, 64))
		fmt.Fprintf(w, "  Achieved send rate:\t%.2f req/s (%d requests sent)\n", r.SendRate, r.Sent)
		if r.Late > 0 {
			fmt.Fprintf(w, "  Late:\t%d requests started more than 1 ms after their time (mean %s, max %s late): the generator could not keep the rate\n",
				r.Late, fmtDuration(r.LateMean), fmtDuration(r.LateMax))
		} else {
			fmt.Fprintf(w, "  Late:\t0 requests\n")
		}
	}
	fmt.Fprintf(w, "\n  Total data:\t%d bytes\n", r.Bytes)
	if n := r.Responses(); n > 0 {
		fmt.Fprintf(w, "  Size/request:\t%d bytes\n", r.Bytes/n)
	}

	if buckets := r.LinearBuckets(10); len(buckets) > 0 {
		fmt.Fprintf(w, "\nResponse time histogram (successful responses):\n")
		var most int64
		for _, b := range buckets {
			most = max(most, b.Count)
		}
		for _, b := range buckets {
			bar := 0
			if most > 0 {
				bar = int(b.Count * 40 / most)
			}
			fmt.Fprintf(w, "  %10s [%d]\t|%s\n", fmtDuration(b.Upper), b.Count, strings.Repeat("■", bar))
		}
		fmt.Fprintf(w, "\nLatency distribution (successful responses):\n")
		for _, p := range load.StandardPercentiles {
			fmt.Fprintf(w, "  %v%% in %s\n", p, fmtDuration(r.Percentile(p)))
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

// fmtDuration shows d in µs, ms or s, whichever keeps 3–4 significant digits.
func fmtDuration(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%.1f µs", float64(d)/float64(time.Microsecond))
	case d < time.Second:
		return fmt.Sprintf("%.3f ms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.4f s", d.Seconds())
	}
}
