package scenarios_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crux-sim/crux-sim/scenarios"
)

// FuzzLoad holds the loader to its promise on any input: it never panics,
// it gives the same answer every time, and it either returns a scenario or
// a *LoadError whose every problem names the file and a line and column
// inside it (from 1:1). The seeds are the
// built-in scenarios and the bad-input corpus of testdata/bad; what the
// fuzzer finds is kept in testdata/fuzz/FuzzLoad.
//
//	go test -fuzz FuzzLoad -fuzztime 5m ./scenarios
func FuzzLoad(f *testing.F) {
	for _, b := range scenarios.Builtins() {
		src, _ := scenarios.BuiltinSource(b.Name)
		f.Add(src)
	}
	bad, err := filepath.Glob(filepath.Join("testdata", "bad", "*.yaml"))
	if err != nil {
		f.Fatal(err)
	}
	for _, path := range bad {
		src, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(src)
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		sc, err := scenarios.Load("fuzz.yaml", src)
		// The same file always gets the same answer.
		if _, again := scenarios.Load("fuzz.yaml", src); (err == nil) != (again == nil) || (err != nil && err.Error() != again.Error()) {
			t.Fatalf("two loads of the same file disagree:\n%v\n----\n%v", err, again)
		}
		if err == nil {
			if sc == nil {
				t.Fatal("Load returned neither a scenario nor an error")
			}
			// A loaded scenario can build its scripted provider.
			_ = sc.Provider
			return
		}
		var le *scenarios.LoadError
		if !errors.As(err, &le) {
			t.Fatalf("Load returned %T, not a *LoadError: %v", err, err)
		}
		if !errors.Is(err, scenarios.ErrLoad) {
			t.Fatalf("the error does not wrap ErrLoad: %v", err)
		}
		if le.File != "fuzz.yaml" || len(le.Problems) == 0 {
			t.Fatalf("a LoadError must name the file and hold a problem: %#v", le)
		}
		// YAML breaks lines at \r\n, \r and \n alike.
		lines := bytes.Count(bytes.ReplaceAll(bytes.ReplaceAll(src, []byte("\r\n"), []byte("\n")), []byte("\r"), []byte("\n")), []byte("\n")) + 1
		for _, p := range le.Problems {
			if p.Line < 1 || p.Col < 1 {
				t.Fatalf("problem at %d:%d, below 1:1: %s", p.Line, p.Col, p.Message)
			}
			if p.Line > lines+1 {
				t.Fatalf("problem at line %d of a %d-line file: %s", p.Line, lines, p.Message)
			}
			if strings.TrimSpace(p.Message) == "" {
				t.Fatalf("problem at %d:%d has no message", p.Line, p.Col)
			}
		}
		if !strings.HasPrefix(err.Error(), "fuzz.yaml:") {
			t.Fatalf("the message does not start with the file: %q", err)
		}
	})
}
