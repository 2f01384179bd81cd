package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/crux-sim/crux-sim/harness/cassette"
)

// corpusCase is one hostile cassette and what must happen to it (see
// harness/cassette/testdata/hostile/README.md).
type corpusCase struct {
	exit      int
	args, out []string
	read      string
	not       []string
}

func readWant(t *testing.T, path string) corpusCase {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c := corpusCase{exit: -1}
	for i, line := range strings.Split(string(b), "\n") {
		if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, val, ok := strings.Cut(line, ": ")
		switch {
		case !ok:
			t.Fatalf("%s:%d: want key: value, got %q", path, i+1, line)
		case key == "exit":
			if c.exit, err = strconv.Atoi(val); err != nil {
				t.Fatalf("%s:%d: %v", path, i+1, err)
			}
		case key == "args":
			c.args = strings.Fields(val)
		case key == "out":
			c.out = append(c.out, val)
		case key == "read":
			c.read = val
		case key == "not":
			c.not = append(c.not, val)
		default:
			t.Fatalf("%s:%d: unknown key %q", path, i+1, key)
		}
	}
	if c.exit < 0 || c.read == "" {
		t.Fatalf("%s: every case needs exit: and read:", path)
	}
	return c
}

// Every hostile cassette of the corpus gets its exit code and message from
// replay, and its reading error from the library; none makes crux-sim open
// a file it names, print the environment or an escape character.
func TestHostileCassettesGetTheirExitCodeAndMessage(t *testing.T) {
	const canary = "CRUX_CORPUS_CANARY"
	t.Setenv(canary, "the environment was printed")
	files, err := filepath.Glob("../../harness/cassette/testdata/hostile/*.cassette")
	if err != nil || len(files) < 20 {
		t.Fatalf("the corpus has %d cassettes (%v)", len(files), err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".cassette")
		t.Run(name, func(t *testing.T) {
			want := readWant(t, strings.TrimSuffix(file, ".cassette")+".want")
			_, rerr := cassette.ReadFile(file)
			switch {
			case want.read == "ok" && rerr != nil:
				t.Errorf("ReadFile failed: %v", rerr)
			case want.read != "ok" && (rerr == nil || !strings.Contains(rerr.Error(), want.read)):
				t.Errorf("ReadFile = %v, want an error containing %q", rerr, want.read)
			}
			code, out := runCLI(t, append(append([]string{"replay"}, want.args...), file)...)
			if code != want.exit {
				t.Errorf("replay exited %d, want %d:\n%s", code, want.exit, out)
			}
			for _, w := range want.out {
				if !strings.Contains(out, w) {
					t.Errorf("the output lacks %q:\n%s", w, out)
				}
			}
			for _, n := range append(want.not, canary) {
				if strings.Contains(out, n) || rerr != nil && strings.Contains(rerr.Error(), n) {
					t.Errorf("the output holds %q:\n%s", n, out)
				}
			}
			if strings.ContainsRune(out, '\x1b') {
				t.Errorf("the output holds an escape character: %q", out)
			}
		})
	}
}
