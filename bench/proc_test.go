package bench

import (
	"math"
	"os"
	"strings"
	"testing"
	"time"
)

// TestParseProc reads CPU time and memory from /proc files captured on
// Linux; the stat line's command name holds spaces and parentheses.
func TestParseProc(t *testing.T) {
	stat, err := os.ReadFile("testdata/proc-stat")
	if err != nil {
		t.Fatal(err)
	}
	cpu, err := parseProcStat(string(stat))
	if err != nil {
		t.Fatal(err)
	}
	if want := 18010 * time.Millisecond; cpu != want { // (1234 + 567) ticks of 10 ms
		t.Errorf("CPU time %v, want %v", cpu, want)
	}
	status, err := os.ReadFile("testdata/proc-status")
	if err != nil {
		t.Fatal(err)
	}
	m, err := parseProcStatus(string(status))
	if err != nil || m.rss != 46080 || m.peak != 53248 || m.anon != 148 {
		t.Errorf("VmRSS %d kB, VmHWM %d kB, RssAnon %d kB, %v; want 46080, 53248, 148", m.rss, m.peak, m.anon, err)
	}
	if m, err := parseProcStatus("VmHWM:\t 12 kB\nVmRSS:\t 10 kB\n"); err != nil || m.anon != 0 {
		t.Errorf("without RssAnon: %+v, %v; want it 0 and no error", m, err)
	}

	for name, bad := range map[string]string{
		"no command name": "4242 loremnews S 1",
		"too few fields":  "4242 (loremnews) S 1 2 3",
		"utime not ticks": "4242 (loremnews) S 1 4242 4242 0 -1 4194560 5123 0 0 0 12x4 567 0 0",
	} {
		if _, err := parseProcStat(bad); err == nil || !strings.Contains(err.Error(), "/proc stat") {
			t.Errorf("%s: error %v, want one naming /proc stat", name, err)
		}
	}
	for name, bad := range map[string]string{
		"no VmHWM":    "Name:\tx\nVmRSS:\t 12 kB\n",
		"not in kB":   "VmHWM:\t 12 MB\nVmRSS:\t 12 kB\n",
		"not numeric": "VmHWM:\t 1x kB\nVmRSS:\t 12 kB\n",
	} {
		if _, err := parseProcStatus(bad); err == nil || !strings.Contains(err.Error(), "/proc status") {
			t.Errorf("%s: error %v, want one naming /proc status", name, err)
		}
	}
}

// TestProcSelf reads this test process's own figures: CPU time grows while
// it works, and the resident memory is under its peak.
func TestProcSelf(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc here: the server's cost is measured on Linux only")
	}
	before, err := procCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// Reading /proc is itself work: poll until a clock tick has been spent.
	after, deadline := before, time.Now().Add(10*time.Second)
	for after <= before {
		if time.Now().After(deadline) {
			t.Fatalf("CPU time stayed at %v through 10 s of work", before)
		}
		if after, err = procCPU(os.Getpid()); err != nil {
			t.Fatal(err)
		}
	}
	m, err := procMemory(os.Getpid())
	if err != nil || m.rss <= 0 || m.peak < m.rss || m.anon <= 0 || m.anon > m.rss {
		t.Errorf("VmRSS %d kB, VmHWM %d kB, RssAnon %d kB, %v", m.rss, m.peak, m.anon, err)
	}
}

func TestServerCost(t *testing.T) {
	c := serverCost(2*time.Second, 2500*time.Millisecond, procMem{rss: 46080, peak: 53248, anon: 12288}, 1000)
	for _, f := range []struct {
		field     string
		got, want float64
	}{
		{"CPU seconds", c.CPUSeconds, 0.5}, {"CPU µs per request", c.CPUMicrosPerOK, 500}, {"RSS MiB", c.RSSMiB, 45}, {"peak RSS MiB", c.PeakRSSMiB, 52}, {"anonymous RSS MiB", c.AnonRSSMiB, 12},
	} {
		if f.got != f.want {
			t.Errorf("%s = %v, want %v", f.field, f.got, f.want)
		}
	}
	if got := (RunResult{Server: c}).progress(); !strings.HasSuffix(got, "; server 500 µs CPU/req, 45.0 MiB (12.0 anon) RSS") {
		t.Errorf("progress line %q", got)
	}
	if c := serverCost(0, time.Second, procMem{rss: 1, peak: 1}, 0); c.CPUMicrosPerOK != 0 || !math.IsNaN((RunResult{Server: c}).CPUPerOK()) {
		t.Errorf("no successful request: %+v", c)
	}
	if r := (RunResult{}); !math.IsNaN(r.CPUPerOK()) || !math.IsNaN(r.RSS()) || strings.Contains(r.progress(), "server") {
		t.Errorf("a run without the server's cost shows one: %q", r.progress())
	}
}
