package sqlitedb_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/loremnews/loremnews/sqlitedb/internal/testenv"
)

// api is what the package exports: its top-level names, and the fields
// and methods of each type.
type api struct {
	names   map[string]bool
	members map[string]map[string]bool // type → field or method
}

// has reports whether name is exported by the package, at the top level
// or as some type's field or method.
func (a api) has(name string) bool {
	if a.names[name] {
		return true
	}
	for _, m := range a.members {
		if m[name] {
			return true
		}
	}
	return false
}

// readAPI parses the package's own files (not its tests) in dir.
func readAPI(tb testing.TB, dir string) (api, map[string]bool) {
	tb.Helper()
	a := api{names: map[string]bool{}, members: map[string]map[string]bool{}}
	member := func(typ, name string) {
		if a.members[typ] == nil {
			a.members[typ] = map[string]bool{}
		}
		a.members[typ][name] = true
	}
	tests := map[string]bool{}
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		tb.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, path := range files {
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			tb.Fatal(err)
		}
		test := strings.HasSuffix(path, "_test.go")
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if test {
					if d.Recv == nil && strings.HasPrefix(d.Name.Name, "Test") {
						tests[d.Name.Name] = true
					}
					continue
				}
				if !d.Name.IsExported() {
					continue
				}
				if d.Recv == nil {
					a.names[d.Name.Name] = true
					continue
				}
				t := d.Recv.List[0].Type
				if s, ok := t.(*ast.StarExpr); ok {
					t = s.X
				}
				if id, ok := t.(*ast.Ident); ok {
					member(id.Name, d.Name.Name)
				}
			case *ast.GenDecl:
				if test {
					continue
				}
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								a.names[n.Name] = true
							}
						}
					case *ast.TypeSpec:
						if !s.Name.IsExported() {
							continue
						}
						a.names[s.Name.Name] = true
						st, ok := s.Type.(*ast.StructType)
						if !ok {
							continue
						}
						for _, f := range st.Fields.List {
							for _, n := range f.Names {
								if n.IsExported() {
									member(s.Name.Name, n.Name)
								}
							}
						}
					}
				}
			}
		}
	}
	return a, tests
}

// docComment is doc.go's package comment, as text.
func docComment(tb testing.TB) string {
	tb.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "doc.go", nil, parser.ParseComments)
	if err != nil {
		tb.Fatal(err)
	}
	return f.Doc.Text()
}

// Words of the docs that are not the package's names.
var notNames = []string{
	"SQLite", "PostgreSQL", "RssAnon", "WriteFile", "SetMaxOpenConns", "QueryContext", "WithValue",
	"DeadlineExceeded", "NullTime", "MiB", "GiB",
}

// The package's documentation (doc.go, README.md, and the repository's
// guide beside the module) names only what the package exports: every
// Err…, sqlitedb.…, Options.…, Stats().… and Type.Member, and in the
// package's own docs every CamelCase word, is one of its names (or a name
// of Go's, SQLite's or a program's, listed in notNames). A field renamed
// or removed with its mention left behind fails here.
func TestDocsNameWhatExists(t *testing.T) {
	a, _ := readAPI(t, ".")
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]string{"doc.go": docComment(t), "README.md": string(readme)}
	const guide = "../docs/use-it-in-your-own-program.md"
	if b, err := os.ReadFile(guide); err == nil {
		docs[guide] = string(b)
	} else {
		testenv.Missing(t, "the guide is checked where the module sits in its repository: %v", err)
	}
	qualified := regexp.MustCompile(`\bsqlitedb\.([A-Z]\w*)`)
	member := regexp.MustCompile(`\b([A-Z]\w*)(?:\(\))?\.([A-Z]\w*)(?:\.([A-Z]\w*))?`)
	camel := regexp.MustCompile(`\b[A-Z][a-z0-9]+[A-Z]\w*\b|\bErr[A-Z]\w*\b`)
	for name, text := range docs {
		text = regexp.MustCompile(`https?://\S+|github\.com/\S+`).ReplaceAllString(text, "")
		for _, m := range member.FindAllStringSubmatch(text, -1) {
			typ, field, sub := m[1], m[2], m[3]
			if a.members[typ] == nil {
				continue // a sentence's end, or a name of another package
			}
			if !a.members[typ][field] {
				t.Errorf("%s names %s: %s has no field or method %s", name, m[0], typ, field)
				continue
			}
			if sub != "" {
				if !a.has(sub) {
					t.Errorf("%s names %s: the package has no %s", name, m[0], sub)
				}
			}
		}
		for _, m := range qualified.FindAllStringSubmatch(text, -1) {
			if !a.names[m[1]] {
				t.Errorf("%s names %s, which the package does not export", name, m[0])
			}
		}
		if name == guide {
			continue // a guide names the program's own types too
		}
		for _, w := range camel.FindAllString(text, -1) {
			if !a.has(w) && !slices.Contains(notNames, w) {
				t.Errorf("%s names %s, which the package does not export", name, w)
			}
		}
	}
}

// What doc.go promises, pinned to the test that proves it: the doc says
// it (say), does not say the opposite (never), and the test exists. A
// behaviour changed with its doc left behind, or a test renamed or
// deleted with the promise kept, fails here.
func TestDocsPromiseWhatTestsProve(t *testing.T) {
	_, tests := readAPI(t, ".")
	doc := strings.Join(strings.Fields(docComment(t)), " ")
	for _, p := range []struct {
		test, say, never string
	}{
		{"TestCoalescedWritesFailAlone", "the write that failed is told so, and the others run again without it", "fails the batch"},
		{"TestACoalescedFailureFailsItAlone", "the write that failed is told so", "fail together"},
		{"TestQueueTurnsInArrivalOrder", "Arrival order holds across the processes that use the package on one file", "no order between processes"},
		{"TestAPageTheMapCannotServeIsAnError", "the statement gets the error it gets without the map", "unless the page was read through Options.MemoryMap"},
		{"TestWriteTimesOutBeforeItsTurn", "A write whose caller left before its turn never runs", ""},
		{"TestTimeoutBoundsTheWholeWait", "Every wait has a deadline (Options.Timeout, 5 s)", ""},
		{"TestBackupCopyOpensReadOnlyAnywhere", "the copy opens read-only where its reader cannot write the folder, leaving nothing beside it", ""},
		{"TestReadOnlyOpenAfterCloseInAFolderItCannotWrite", "opens a closed database read-only in a folder it cannot write", ""},
		{"TestWriterIsFIFO", "All writes of the process run on one goroutine in arrival order", ""},
		{"TestNestedWriteFailsAtOnce", "A Write or Coalesce called inside a write's function fails at once", ""},
		{"TestAFailedSyncStopsEveryCheckpoint", "A failed sync of the database file stops every checkpoint of the DB", ""},
	} {
		if !tests[p.test] {
			t.Errorf("doc.go's promise %q is pinned to %s, which is not a test of the package", p.say, p.test)
		}
		if !strings.Contains(doc, p.say) {
			t.Errorf("doc.go no longer says %q, which %s proves", p.say, p.test)
		}
		if p.never != "" && strings.Contains(doc, p.never) {
			t.Errorf("doc.go says %q, which %s disproves", p.never, p.test)
		}
	}
}
