package sqlitedb_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/loremnews/loremnews/sqlitedb/internal/testenv"
)

// The package works on a 32-bit target: there the VFS has no address
// space to reserve for its map, so connections use SQLite's default VFS,
// and Open, Write and Read work as anywhere else. The test builds a small
// program for 386 (cgo, with gcc -m32) and runs it.
func TestOpensOn32Bit(t *testing.T) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skip("builds for linux/386 from linux/amd64")
	}
	if testing.Short() {
		t.Skip("builds the package and SQLite for another target (about a minute)")
	}
	if err := exec.Command("sh", "-c", "echo 'int main(void){return 0;}' | gcc -m32 -x c -o /dev/null -").Run(); err != nil {
		testenv.Missing(t, "needs gcc -m32 (Debian's gcc-multilib; scripts/install-test-deps installs it): %v", err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "open32")
	build := exec.Command("go", "build", "-o", bin, "./testdata/open32")
	build.Env = append(os.Environ(), "GOARCH=386", "CGO_ENABLED=1", "CC=gcc -m32")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build for 386: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, filepath.Join(dir, "test.db")).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "rows: 1" {
		t.Fatalf("the 32-bit program: %v\n%s", err, out)
	}
}
