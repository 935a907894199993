package sqlitedb_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A program of its own that imports the package brings in two modules,
// the package's and the SQLite binding's, and nothing else; built without
// cgo, it fails with one line saying the package needs cgo.
func TestImportedByAModuleOfItsOwn(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	pkgDir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files := map[string]string{
		"go.mod": "module example.com/service\n\ngo 1.25\n\nrequire github.com/loremnews/loremnews/sqlitedb v0.4.0\n\n" +
			"require " + bindingRequirement(t, pkgDir) + " // indirect\n\n" +
			"replace github.com/loremnews/loremnews/sqlitedb => " + pkgDir + "\n",
		"main.go": `package main

import (
	"context"
	"fmt"
	"os"

	"github.com/loremnews/loremnews/sqlitedb"
)

func main() {
	db, err := sqlitedb.Open(context.Background(), os.Args[1], nil)
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	db.Close()
}
`,
	}
	sum, err := os.ReadFile(filepath.Join(pkgDir, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	files["go.sum"] = string(sum)
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(env []string, args ...string) (string, error) {
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run(nil, "list", "-m", "all")
	if err != nil {
		t.Fatalf("go list -m all: %v\n%s", err, out)
	}
	want := []string{"example.com/service", "github.com/loremnews/loremnews/sqlitedb", "github.com/mattn/go-sqlite3"}
	got := []string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		got = append(got, strings.Fields(line)[0])
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("go list -m all in a module importing the package:\n%s\nwant the modules %v", out, want)
	}

	out, err = run([]string{"CGO_ENABLED=0"}, "build", "-o", filepath.Join(dir, "service"), ".")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if err == nil || len(lines) != 2 || !strings.Contains(lines[1], "sqlitedb_needs_cgo") {
		t.Errorf("go build with CGO_ENABLED=0: %v\n%s\nwant it to fail with one line saying the package needs cgo", err, out)
	}
	if out, err := run(nil, "build", "-o", filepath.Join(dir, "service"), "."); err != nil {
		t.Fatalf("go build with cgo: %v\n%s", err, out)
	}
}

// bindingRequirement answers "github.com/mattn/go-sqlite3 vX.Y.Z" as the
// package's go.mod requires it.
func bindingRequirement(t *testing.T, pkgDir string) string {
	t.Helper()
	mod, err := os.ReadFile(filepath.Join(pkgDir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(mod), "\n") {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require "))
		if len(f) >= 2 && f[0] == "github.com/mattn/go-sqlite3" {
			return f[0] + " " + f[1]
		}
	}
	t.Fatal("the package's go.mod does not require github.com/mattn/go-sqlite3")
	return ""
}
