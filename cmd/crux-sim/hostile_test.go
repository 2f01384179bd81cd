package main

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/tools/txtar"
)

// hostileSecret is in the environment of every hostile case: no output may
// carry it, nor the PATH the process started with, whatever file a case
// makes the CLI open.
const hostileSecret = "sk-hostile-0123456789abcdef"

// TestHostileInputsGetAClearErrorAndABoundedCost runs every case of the
// hostile corpus, testdata/hostile/*.txtar, through the CLI's entry point in
// a directory of its own. A case's comment says what it checks and holds
// its directives, one a line:
//
//	args: run --replay s.json   the command line (words split on spaces; . is the case's directory)
//	exit: 2                     the exit code
//	stdout: TEXT                standard output contains TEXT, as written
//	stderr: TEXT                standard error contains TEXT
//	noline: TEXT                no line of standard output starts with TEXT
//	fifo: NAME                  make a FIFO named NAME
//	sparse: NAME BYTES          make a file of BYTES zero bytes that costs no disk
//	symlink: NAME TARGET        make NAME a symbolic link to TARGET
//	depth: N                    replace the word DEEP in args and files with N levels of ../
//
// and every case checks that the secret in the environment appears in
// neither output, and that neither output holds a raw control character
// that could paint the terminal or rewrite a line (ESC, CR, a bidi
// control).
func TestHostileInputsGetAClearErrorAndABoundedCost(t *testing.T) {
	cases, err := filepath.Glob(filepath.Join("testdata", "hostile", "*.txtar"))
	if err != nil || len(cases) == 0 {
		t.Fatalf("no hostile corpus: %v", err)
	}
	for _, path := range cases {
		name := strings.TrimSuffix(filepath.Base(path), ".txtar")
		t.Run(name, func(t *testing.T) {
			ar, err := txtar.ParseFile(path)
			if err != nil {
				t.Fatal(err)
			}
			t.Setenv("CRUX_SIM_HOSTILE_SECRET", hostileSecret)
			dir := t.TempDir()
			t.Chdir(dir)
			deep := strings.Repeat("../", strings.Count(filepath.ToSlash(dir), "/")+2)
			var args []string
			exit := -1
			var wantOut, wantErr, noLines []string
			sc := bufio.NewScanner(strings.NewReader(string(ar.Comment)))
			for sc.Scan() {
				line := sc.Text()
				key, val, ok := strings.Cut(line, ": ")
				if !ok || strings.HasPrefix(line, "#") {
					continue
				}
				val = strings.ReplaceAll(val, "DEEP", deep)
				switch key {
				case "args":
					args = strings.Fields(val)
				case "exit":
					exit, _ = strconv.Atoi(val)
				case "stdout":
					wantOut = append(wantOut, val)
				case "stderr":
					wantErr = append(wantErr, val)
				case "noline":
					noLines = append(noLines, val)
				case "fifo":
					if err := syscall.Mkfifo(val, 0o600); err != nil {
						t.Skipf("no FIFOs: %v", err)
					}
				case "sparse":
					f, size, _ := strings.Cut(val, " ")
					n, _ := strconv.ParseInt(size, 10, 64)
					file, err := os.Create(f)
					if err != nil {
						t.Fatal(err)
					}
					if err := file.Truncate(n); err != nil {
						t.Fatal(err)
					}
					file.Close()
				case "symlink":
					from, to, _ := strings.Cut(val, " ")
					if err := os.Symlink(to, from); err != nil {
						t.Skipf("no symlinks: %v", err)
					}
				default:
					t.Fatalf("unknown directive %q", key)
				}
			}
			for _, f := range ar.Files {
				if err := os.MkdirAll(filepath.Dir(f.Name), 0o755); err != nil {
					t.Fatal(err)
				}
				data := strings.ReplaceAll(string(f.Data), "DEEP", deep)
				if err := os.WriteFile(f.Name, []byte(data), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if len(args) == 0 || exit < 0 {
				t.Fatal("a case needs args: and exit:")
			}
			code, stdout, stderr := cli(args...)
			if code != exit {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exit, stdout, stderr)
			}
			for _, w := range wantOut {
				if !strings.Contains(stdout, w) {
					t.Errorf("stdout lacks %q:\n%s", w, stdout)
				}
			}
			for _, w := range wantErr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			for _, line := range strings.Split(stdout, "\n") {
				for _, no := range noLines {
					if strings.HasPrefix(line, no) {
						t.Errorf("stdout has a line that starts with %q: %q", no, line)
					}
				}
			}
			for _, out := range []string{stdout, stderr} {
				if i := strings.IndexFunc(out, paintsTheTerminal); i >= 0 {
					t.Errorf("an output holds the raw control %U at byte %d", []rune(out[i:])[0], i)
				}
			}
			// /proc/self/environ holds the environment the process started
			// with (not what t.Setenv adds): its PATH entry stands for it.
			path := "PATH=" + os.Getenv("PATH")
			for _, out := range []string{stdout, stderr} {
				if strings.Contains(out, hostileSecret) || strings.Contains(out, path) {
					t.Errorf("an output holds the environment (%d bytes of output not shown)", len(out))
				}
			}
		})
	}
}

// paintsTheTerminal reports the characters a hostile name must never put on
// a terminal raw: ESC (every ANSI escape), CR, the other C0 and C1 controls
// but tab and line feed, and the bidi controls that reorder a line.
func paintsTheTerminal(r rune) bool {
	switch {
	case r == '\t' || r == '\n':
		return false
	case r < 0x20 || (r >= 0x7f && r < 0xa0):
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e || r == 0x200f, r == 0x2028 || r == 0x2029:
		return true
	}
	return false
}
