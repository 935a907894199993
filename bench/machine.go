package bench

import (
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
)

// Machine describes where the experiment ran.
type Machine struct {
	Cores     int    `json:"cores"`
	CPU       string `json:"cpu"`
	MemoryGiB int    `json:"memory_gib"`
	OS        string `json:"os"`
	Kernel    string `json:"kernel"`
	Go        string `json:"go"`
	SQLite    string `json:"sqlite"`
}

func readMachine(binary string) Machine {
	m := Machine{Cores: runtime.NumCPU(), Go: runtime.Version(), OS: runtime.GOOS + "/" + runtime.GOARCH, SQLite: sqliteVersion(binary)}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		if mm := regexp.MustCompile(`(?m)^model name\s*:\s*(.+)$`).FindSubmatch(b); mm != nil {
			m.CPU = strings.TrimSpace(string(mm[1]))
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		if mm := regexp.MustCompile(`MemTotal:\s+(\d+) kB`).FindSubmatch(b); mm != nil {
			kb, _ := strconv.Atoi(string(mm[1]))
			m.MemoryGiB = (kb + 512*1024) / (1024 * 1024)
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/etc/os-release"); err == nil {
		if mm := regexp.MustCompile(`(?m)^PRETTY_NAME="?([^"\n]+)"?$`).FindSubmatch(b); mm != nil {
			m.OS = string(mm[1]) + " " + m.OS
		}
	}
	return m
}

var sqliteVersionRe = regexp.MustCompile(`(?m)^sqlite (\S+)`)

// sqliteVersion asks the binary which SQLite it links, and whether it was
// built with the recommended compile-time options (DQS=0 is one of them).
func sqliteVersion(binary string) string {
	out, err := exec.Command(binary, "version").Output()
	if err != nil {
		return "unknown"
	}
	m := sqliteVersionRe.FindSubmatch(out)
	if m == nil {
		return "unknown"
	}
	v := string(m[1])
	if strings.Contains(string(out), "DQS=0") {
		return v + " (recommended compile-time options)"
	}
	return v + " (default compile-time options)"
}
