package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// serverActions stands for the list the server accepts (http.BenchmarkActions).
var (
	serverSingles = []string{"post_create", "comment_create", "post_destroy", "comment_destroy", "post_show", "posts_index", "user_show"}
	serverActions = append(slices.Clone(serverSingles), "read_heavy", "write_heavy", "balanced", "point_read")
)

func TestParseSetups(t *testing.T) {
	setups, err := ParseSetups("naive, split,postgres", "/bin/loremnews")
	if err != nil {
		t.Fatal(err)
	}
	if len(setups) != 3 {
		t.Fatalf("%d setups, want 3: %+v", len(setups), setups)
	}
	for _, f := range []struct {
		field     string
		got, want any
	}{
		{"setup 0's SQLite setup", setups[0].SQLiteSetup, "naive"},
		{"setup 0's note names step 00", strings.Contains(setups[0].Note, "step 00"), true},
		{"setup 1's name", setups[1].Name, "split"},
		{"setup 2 on PostgreSQL", setups[2].Postgres, true},
		{"setup 2's SQLite setup", setups[2].SQLiteSetup, ""},
		{"setup 2's binary", setups[2].Binary, "/bin/loremnews"},
	} {
		if f.got != f.want {
			t.Errorf("%s = %v, want %v", f.field, f.got, f.want)
		}
	}
	if _, err := ParseSetups("split,turbo", "x"); err == nil || !strings.Contains(err.Error(), `unknown setup "turbo" in --setups (want some of naive,`) {
		t.Errorf("unknown setup: %v", err)
	}
}

func TestParseTargets(t *testing.T) {
	setups, err := ParseTargets("sqlite,postgres,postgres-async", "bin")
	if err != nil {
		t.Fatal(err)
	}
	if len(setups) != 3 {
		t.Fatalf("%d setups, want 3: %+v", len(setups), setups)
	}
	if setups[0].SQLiteSetup != "split" {
		t.Errorf("sqlite's SQLite setup = %q, want split", setups[0].SQLiteSetup)
	}
	if setups[0].Postgres {
		t.Errorf("sqlite runs on PostgreSQL")
	}
	if !setups[1].Postgres {
		t.Errorf("postgres does not run on PostgreSQL")
	}
	if got, want := setups[2].ServeArgs, []string{"--pg-synchronous-commit", "off"}; !slices.Equal(got, want) {
		t.Errorf("postgres-async's serve args = %q, want %q", got, want)
	}
	if _, err := ParseTargets("sqlite,mysql", "bin"); err == nil || !strings.Contains(err.Error(), `unknown target "mysql"`) {
		t.Errorf("unknown target: %v", err)
	}
}

func TestCompareAndPlainSetups(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "loremnews-old")
	if err := os.WriteFile(old, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	first := Setup{Name: "split", Binary: "bin/loremnews", SQLiteSetup: "split", ServeArgs: []string{"--gzip"}}
	others, err := CompareSetups(first, "before="+old)
	if err != nil {
		t.Fatal(err)
	}
	if len(others) != 1 {
		t.Fatalf("%d setups, want 1: %+v", len(others), others)
	}
	for _, f := range []struct {
		field     string
		got, want any
	}{
		{"name", others[0].Name, "before"},
		{"binary", others[0].Binary, old},
		{"SQLite setup", others[0].SQLiteSetup, "split"},
		{"serve args as the first's", slices.Equal(others[0].ServeArgs, first.ServeArgs), true},
		{"note names the binary", strings.Contains(others[0].Note, "loremnews-old"), true},
	} {
		if f.got != f.want {
			t.Errorf("compared setup's %s = %v, want %v", f.field, f.got, f.want)
		}
	}
	for list, want := range map[string]string{
		"before":                        `bad --compare entry "before": want NAME=PATH`,
		"=" + old:                       "want NAME=PATH",
		"x=" + filepath.Join(dir, "no"): "--compare x: stat",
	} {
		if _, err := CompareSetups(first, list); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", list, err, want)
		}
	}
	plain, err := PlainSetup(old)
	if err != nil {
		t.Fatal(err)
	}
	if plain.Name != "split-plain" {
		t.Errorf("plain setup's name = %q, want split-plain", plain.Name)
	}
	if plain.SQLiteSetup != "split" {
		t.Errorf("plain setup's SQLite setup = %q, want split", plain.SQLiteSetup)
	}
	if !filepath.IsAbs(plain.Binary) {
		t.Errorf("plain setup's binary %q is not absolute", plain.Binary)
	}
	if _, err := PlainSetup(filepath.Join(dir, "no")); err == nil || !strings.HasPrefix(err.Error(), "--plain-binary: ") {
		t.Errorf("missing plain binary: %v", err)
	}
}

func TestParseLevels(t *testing.T) {
	if got, err := ParseLevels(" 1, 5,,10 ", "--point-read"); err != nil || !slices.Equal(got, []int{1, 5, 10}) {
		t.Errorf("%v, %v", got, err)
	}
	if got, err := ParseLevels("", "--point-read"); err != nil || got != nil {
		t.Errorf("empty: %v, %v", got, err)
	}
	for _, bad := range []string{"1,0", "1,-2", "1,x"} {
		if _, err := ParseLevels(bad, "--sweep-levels"); err == nil || !strings.Contains(err.Error(), "bad --sweep-levels entry") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestParseScenarios(t *testing.T) {
	got, err := ParseScenarios("balanced@256, post_create@20,", 5, serverActions, serverSingles)
	if err != nil || !slices.Equal(got, []Scenario{{"balanced", 256}, {"post_create", 20}}) {
		t.Errorf("%v, %v", got, err)
	}
	// "actions": each single action at c, then two mixes at 256; neither
	// the other mix nor the trivial read.
	got, err = ParseScenarios("actions", 5, serverActions, serverSingles)
	want := []Scenario{{"post_create", 5}, {"comment_create", 5}, {"post_destroy", 5}, {"comment_destroy", 5}, {"post_show", 5},
		{"posts_index", 5}, {"user_show", 5}, {"balanced", 256}, {"write_heavy", 256}}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("actions: %v, %v", got, err)
	}
	for list, wantErr := range map[string]string{
		"balanced":       `bad --scenarios entry "balanced" (want ACTION@CONCURRENCY)`,
		"balanced@0":     `bad --scenarios entry "balanced@0"`,
		"@4":             `bad --scenarios entry "@4"`,
		"post_craete@20": `--scenarios post_craete@20: unknown benchmarking action "post_craete" (want one of post_create,`,
	} {
		if _, err := ParseScenarios(list, 5, serverActions, serverSingles); err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("%q: %v, want %q", list, err, wantErr)
		}
	}
	if err := CheckAction("ceiling", serverActions); err != nil {
		t.Errorf("the ceiling: %v", err)
	}
}

func TestScaledSetups(t *testing.T) {
	setups := []Setup{{Name: "split", SQLiteSetup: "split"}, {Name: "before", SQLiteSetup: "split", Note: "Another build."}}
	got, err := ScaledSetups(setups, "1,100")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range got {
		names = append(names, s.Name)
	}
	if want := []string{"split", "before", "split ×100", "before ×100"}; !slices.Equal(names, want) {
		t.Fatalf("names %q, want %q", names, want)
	}
	cfg := Config{Users: 100, Posts: 1000}
	if s := got[0]; s.users(cfg) != 100 || s.posts(cfg) != 1000 {
		t.Fatalf("unscaled setup seeds %d users, %d posts", s.users(cfg), s.posts(cfg))
	}
	if s := got[3]; s.users(cfg) != 10_000 || s.posts(cfg) != 100_000 || s.Note != "Another build. On 100 times the data set." {
		t.Fatalf("scaled setup %+v seeds %d users, %d posts", s, s.users(cfg), s.posts(cfg))
	}
	if _, err := ScaledSetups(setups, "1,x"); err == nil || !strings.Contains(err.Error(), "--scales") {
		t.Fatalf("bad list: %v", err)
	}
}

func TestWorkerSetups(t *testing.T) {
	got, err := WorkerSetups([]Setup{{Name: "split", SQLiteSetup: "split"}, {Name: "naive", SQLiteSetup: "naive"}}, "1,4", true)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range got {
		names = append(names, fmt.Sprintf("%s/%d", s.Name, s.Workers))
	}
	if want := []string{"split/0", "naive/0", "split 4 processes/4", "split 4 processes polling/4", "naive 4 processes/4"}; !slices.Equal(names, want) {
		t.Fatalf("setups %q, want %q", names, want)
	}
	if !got[3].PollWriters || got[2].PollWriters {
		t.Fatalf("only the polling setups poll: %+v", got)
	}
	if _, err := WorkerSetups(nil, "1,0", false); err == nil || !strings.Contains(err.Error(), "--workers") {
		t.Fatalf("bad list: %v", err)
	}
}

// A setup is served with --setup, or with --profile by a binary of a
// commit from before --setup had its name: --compare serves those too.
func TestSetupFlagFollowsTheBinary(t *testing.T) {
	dir := t.TempDir()
	fake := func(name, help string) string {
		path := filepath.Join(dir, name)
		script := "#!/bin/sh\nprintf '%s\\n' '" + help + "'\n"
		if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		return path
	}
	for _, c := range []struct{ binary, want string }{
		{fake("old", "  --profile NAME  connection setup NAME"), "--profile"},
		{fake("new", "  --setup NAME  SQLite setup NAME\n  --profile NAME  the same as --setup"), "--setup"},
		{filepath.Join(dir, "missing"), "--setup"},
		{"", "--setup"},
	} {
		if got := setupFlag(c.binary); got != c.want {
			t.Errorf("setupFlag(%s) = %s, want %s", c.binary, got, c.want)
		}
	}
}
