package bench

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/loremnews/loremnews/internal/proctree"
)

// What the server process itself spends on a run, read from Linux's /proc:
// throughput alone hides a setup that buys its requests/sec with more CPU
// or memory. Only the loremnews process is measured; a PostgreSQL server's
// own processes are not.

// clockTicksPerSec is Linux's USER_HZ, the unit of utime and stime in
// /proc/PID/stat (`getconf CLK_TCK`). It is part of the kernel's ABI and
// 100 on every architecture Go builds this program for.
const clockTicksPerSec = 100

// ServerCost is what the server process spent during one load run.
type ServerCost struct {
	// CPUSeconds is the process's user plus system CPU time during the run.
	CPUSeconds float64 `json:"cpu_seconds"`
	// CPUMicrosPerOK is CPUSeconds per successful request, in µs; 0 if no
	// request succeeded.
	CPUMicrosPerOK float64 `json:"cpu_us_per_ok"`
	// RSSMiB is the process's resident memory (VmRSS) at the end of the run.
	RSSMiB float64 `json:"rss_mib"`
	// PeakRSSMiB is its high-water mark (VmHWM) since it started.
	PeakRSSMiB float64 `json:"peak_rss_mib"`
	// AnonRSSMiB is the part of RSSMiB that is the process's own memory
	// (RssAnon): the rest is pages of files it maps, such as the database
	// file read through sqlitedb's memory map, which are the kernel's page
	// cache. 0 if not measured.
	AnonRSSMiB float64 `json:"anon_rss_mib,omitempty"`
}

// A server of several processes (serve --workers) is measured whole: its
// parent and the workers running now, plus what the workers that have
// exited spent (the parent's cutime and cstime once it has waited for
// them).

// treeCPU is procCPU of pid and its children, with the children it
// has waited for.
func treeCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("bench: server CPU time: %w", err)
	}
	total, err := parseProcStat(string(b))
	if err != nil {
		return 0, err
	}
	reaped, err := parseProcStatFields(string(b), 13)
	if err != nil {
		return 0, err
	}
	total += reaped
	for _, child := range proctree.Children(pid) {
		if cpu, err := procCPU(child); err == nil { // one that just exited is counted once reaped
			total += cpu
		}
	}
	return total, nil
}

// treeMemory is procMemory of pid and its children, added up.
func treeMemory(pid int) (procMem, error) {
	m, err := procMemory(pid)
	if err != nil {
		return m, err
	}
	for _, child := range proctree.Children(pid) {
		if c, err := procMemory(child); err == nil {
			m.rss, m.peak, m.anon = m.rss+c.rss, m.peak+c.peak, m.anon+c.anon
		}
	}
	return m, nil
}

// procMem is a process's resident memory in KiB: now (VmRSS), its peak
// (VmHWM), and the anonymous part of it now (RssAnon, 0 if the kernel does
// not say).
type procMem struct{ rss, peak, anon int64 }

// procCPU returns the process's user plus system CPU time so far.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("bench: server CPU time: %w", err)
	}
	return parseProcStat(string(b))
}

// parseProcStat reads utime and stime (fields 14 and 15, in clock ticks)
// from a /proc/PID/stat line. The command name (field 2) is in parentheses
// and may itself hold spaces and parentheses, so fields are counted from
// the last ')'.
func parseProcStat(stat string) (time.Duration, error) {
	return parseProcStatFields(stat, 11)
}

// parseProcStatFields adds up the two tick counts from the one at index
// from, counted from the state (11: utime and stime; 13: cutime and
// cstime, the children's it has waited for).
func parseProcStatFields(stat string, from int) (time.Duration, error) {
	end := strings.LastIndexByte(stat, ')')
	if end < 0 {
		return 0, fmt.Errorf("bench: /proc stat %q: no command name", truncateLine(stat, 60))
	}
	fields := strings.Fields(stat[end+1:]) // fields[0] is field 3, the state
	if len(fields) < from+2 {
		return 0, fmt.Errorf("bench: /proc stat: %d fields after the command name, want at least %d", len(fields), from+2)
	}
	var ticks int64
	for _, f := range fields[from : from+2] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("bench: /proc stat: CPU time %q is not a tick count", f)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicksPerSec, nil
}

// procMemory returns the process's resident memory.
func procMemory(pid int) (procMem, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return procMem{}, fmt.Errorf("bench: server memory: %w", err)
	}
	return parseProcStatus(string(b))
}

// parseProcStatus reads VmRSS, VmHWM and RssAnon ("VmRSS:	   12345 kB")
// from /proc/PID/status; RssAnon may be missing.
func parseProcStatus(status string) (m procMem, err error) {
	found := map[string]*int64{"VmRSS": &m.rss, "VmHWM": &m.peak, "RssAnon": &m.anon}
	seen := 0
	for _, line := range strings.Split(status, "\n") {
		key, value, ok := strings.Cut(line, ":")
		dst := found[key]
		if !ok || dst == nil {
			continue
		}
		f := strings.Fields(value)
		if len(f) != 2 || f[1] != "kB" {
			return procMem{}, fmt.Errorf("bench: /proc status: %s %q, want a size in kB", key, strings.TrimSpace(value))
		}
		if *dst, err = strconv.ParseInt(f[0], 10, 64); err != nil {
			return procMem{}, fmt.Errorf("bench: /proc status: %s %q, want a size in kB", key, strings.TrimSpace(value))
		}
		if key != "RssAnon" {
			seen++
		}
	}
	if seen != 2 {
		return procMem{}, fmt.Errorf("bench: /proc status lacks VmRSS or VmHWM")
	}
	return m, nil
}

// serverCost combines the CPU time read before and after a run, and the
// memory read after it, for a run with ok successful requests.
func serverCost(cpuBefore, cpuAfter time.Duration, mem procMem, ok int64) *ServerCost {
	c := &ServerCost{CPUSeconds: (cpuAfter - cpuBefore).Seconds(), RSSMiB: float64(mem.rss) / 1024,
		PeakRSSMiB: float64(mem.peak) / 1024, AnonRSSMiB: float64(mem.anon) / 1024}
	if ok > 0 {
		c.CPUMicrosPerOK = c.CPUSeconds * 1e6 / float64(ok)
	}
	return c
}

// CPUPerOK is the server's CPU time per successful request in seconds, NaN
// if not measured (results written before it was) or nothing succeeded.
func (r RunResult) CPUPerOK() float64 {
	if r.Server == nil || r.Server.CPUMicrosPerOK <= 0 {
		return math.NaN()
	}
	return r.Server.CPUMicrosPerOK / 1e6
}

// RSS is the server's resident memory at the end of the run in MiB, NaN if
// not measured.
func (r RunResult) RSS() float64 {
	if r.Server == nil || r.Server.RSSMiB <= 0 {
		return math.NaN()
	}
	return r.Server.RSSMiB
}

// AnonRSS is the anonymous part of RSS in MiB, NaN if not measured.
func (r RunResult) AnonRSS() float64 {
	if r.Server == nil || r.Server.AnonRSSMiB <= 0 {
		return math.NaN()
	}
	return r.Server.AnonRSSMiB
}

// progress is the run in one line for the command's progress output:
// throughput, latency, failures and what the server spent.
func (r RunResult) progress() string {
	line := fmt.Sprintf("%.0f successful req/s, p99 %s, slowest %s, %d failed", r.OKPerSec(),
		fmtSeconds(r.Percentile(99)), fmtSeconds(orNaN(r.measured(), r.Slowest)), r.Failures)
	if r.Server != nil {
		line += fmt.Sprintf("; server %s CPU/req, %s RSS", fmtMicros(r.CPUPerOK()), fmtRSS(r.RSS(), r.AnonRSS()))
	}
	return line
}

// fmtMicros shows a CPU time per request in µs, "–" if unknown.
func fmtMicros(s float64) string {
	if math.IsNaN(s) {
		return "–"
	}
	return fmt.Sprintf("%.0f µs", s*1e6)
}

// fmtRSS shows a resident size in MiB with its anonymous part, if known:
// "113.4 MiB (31.0 anon)".
func fmtRSS(rss, anon float64) string {
	if math.IsNaN(anon) || math.IsNaN(rss) {
		return fmtMiB(rss)
	}
	return fmt.Sprintf("%s (%.1f anon)", fmtMiB(rss), anon)
}

// fmtMiB shows a memory size in MiB, "–" if unknown.
func fmtMiB(m float64) string {
	if math.IsNaN(m) {
		return "–"
	}
	return fmt.Sprintf("%.1f MiB", m)
}
