// Package proctree finds a process's children in Linux's /proc: the
// worker processes of a server (serve --workers), for the experiment's
// measure of what the server spent and for the tests.
package proctree

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Children lists, in order, the processes whose parent is pid and that
// have not exited (zombies are left out); none where /proc cannot say.
func Children(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	want := strconv.Itoa(pid)
	var kids []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …: the command may hold spaces and
		// parentheses, so the fields are counted from the last ')'.
		stat := string(b)
		f := strings.Fields(stat[strings.LastIndexByte(stat, ')')+1:])
		if len(f) > 1 && f[0] != "Z" && f[1] == want {
			kids = append(kids, child)
		}
	}
	slices.Sort(kids)
	return kids
}
