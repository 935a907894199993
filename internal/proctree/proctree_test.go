package proctree

import (
	"os"
	"os/exec"
	"slices"
	"testing"
)

func TestChildren(t *testing.T) {
	var cmds []*exec.Cmd
	for range 2 {
		cmd := exec.Command("sleep", "30")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	defer func() {
		for _, c := range cmds {
			c.Process.Kill()
			c.Wait()
		}
	}()
	got := Children(os.Getpid())
	for _, c := range cmds {
		if !slices.Contains(got, c.Process.Pid) {
			t.Errorf("Children(%d) = %v, without the child %d", os.Getpid(), got, c.Process.Pid)
		}
	}
	if !slices.IsSorted(got) {
		t.Errorf("Children = %v, not in order", got)
	}
	cmds[0].Process.Kill()
	cmds[0].Wait()
	if slices.Contains(Children(os.Getpid()), cmds[0].Process.Pid) {
		t.Errorf("a child that exited and was waited for is still listed")
	}
	if kids := Children(cmds[1].Process.Pid); len(kids) != 0 {
		t.Errorf("sleep has children %v", kids)
	}
}
