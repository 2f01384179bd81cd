package scenarios_test

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sebdah/goldie/v2"

	"github.com/crux-sim/crux-sim/core/trace"
	"github.com/crux-sim/crux-sim/scenarios"
)

// problemLine is how every line of a load error reads: the file, a line and
// a column from 1, and what is wrong.
var problemLine = regexp.MustCompile(`^(testdata/bad/[a-z0-9-]+\.yaml):([1-9][0-9]*):([1-9][0-9]*): (.+)$`)

// TestBadScenarioFilesFailWithTheirMessages loads every file of the
// bad-input corpus, testdata/bad/*.yaml, and compares the error with the
// sibling .err file, which holds exactly what the loader must say (and
// what crux-sim run prints before it exits 2). Refresh the .err files
// after an intended change with:
//
//	go test ./scenarios -run BadScenarioFiles -update
//
// and read the diff: each message must name the file, line and column and
// say what is wrong and how to fix it.
func TestBadScenarioFilesFailWithTheirMessages(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "bad", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 50 {
		t.Fatalf("the bad-input corpus has %d files; it should cover every kind of mistake", len(files))
	}
	g := goldie.New(t, goldie.WithFixtureDir(filepath.Join("testdata", "bad")), goldie.WithNameSuffix(".err"))
	for _, path := range files {
		name := strings.TrimSuffix(filepath.Base(path), ".yaml")
		t.Run(name, func(t *testing.T) {
			sc, err := scenarios.LoadFile(filepath.ToSlash(path))
			if err == nil {
				t.Fatalf("%s loaded as scenario %q; it must be rejected", path, sc.Name)
			}
			var le *scenarios.LoadError
			if !errors.As(err, &le) || !errors.Is(err, scenarios.ErrLoad) {
				t.Fatalf("got %T %v; want a *scenarios.LoadError wrapping ErrLoad", err, err)
			}
			for _, line := range strings.Split(err.Error(), "\n") {
				m := problemLine.FindStringSubmatch(line)
				if m == nil || m[1] != filepath.ToSlash(path) {
					t.Errorf("a problem line does not read %s:LINE:COLUMN: MESSAGE: %q", path, line)
				}
				// What a file holds reaches the terminal escaped, and a
				// huge value in it does not make a huge message.
				if trace.Escape(line) != line {
					t.Errorf("a problem line holds a raw control character: %q", line)
				}
				if len(line) > 2048 {
					t.Errorf("a problem line is %d bytes long; a message shows a huge value's start and end", len(line))
				}
			}
			g.Assert(t, name, []byte(err.Error()+"\n"))
		})
	}
}

// TestEveryBadFileSaysWhatIsWrongInItsHeader keeps the corpus readable:
// each file but the empty ones starts with a "# Bad:" comment that says
// what mistake it holds.
func TestEveryBadFileSaysWhatIsWrongInItsHeader(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "bad", "*.yaml"))
	for _, path := range files {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		switch filepath.Base(path) {
		case "empty.yaml", "only-comments.yaml":
			continue
		}
		if !strings.HasPrefix(string(src), "# Bad: ") {
			t.Errorf("%s does not start with a \"# Bad: what is wrong\" comment", path)
		}
	}
}
