package scenarios_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/crux-sim/crux-sim/internal/budget"
	"github.com/crux-sim/crux-sim/internal/inputfile"
	"github.com/crux-sim/crux-sim/scenarios"
)

// loadWithin loads src and fails unless the loader rejects it with a
// message containing want, allocating at most most bytes.
func loadWithin(t *testing.T, src string, want string, most uint64) {
	t.Helper()
	var err error
	b := []byte(src)
	n := budget.Allocated(func() { _, err = scenarios.Load("hostile.yaml", b) })
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v, want an error containing %q", err, want)
	}
	if n > most {
		t.Errorf("rejecting %d bytes allocated %d bytes; the budget is %d", len(src), n, most)
	}
}

// Unclosed flow brackets cost the YAML parser memory quadratic in their
// number (200 KB of [ took over 11 GB); the pre-scan stops at the 201st
// level, before the parser runs.
func TestDeepFlowNestingIsRejectedBeforeTheParserWithinABudget(t *testing.T) {
	loadWithin(t, "a: "+strings.Repeat("[", 20_000), "hostile.yaml:1:203: YAML nested more than 200 levels deep", 64<<10)
	loadWithin(t, "a: "+strings.Repeat("{b: ", 20_000), "YAML nested more than 200 levels deep", 64<<10)
}

func TestDeepBlockNestingIsRejectedBeforeTheParserWithinABudget(t *testing.T) {
	var b strings.Builder
	for i := range 300 {
		fmt.Fprintf(&b, "%sk%d:\n", strings.Repeat(" ", i), i)
	}
	loadWithin(t, b.String(), "hostile.yaml:201:201: YAML nested more than 200 levels deep", 64<<10)
}

// Keys of one block mapping cost the parser time quadratic in their
// number (300,000 took four minutes).
func TestABlockMappingWithTooManyKeysIsRejectedWithinABudget(t *testing.T) {
	var b strings.Builder
	for i := range 20_000 {
		fmt.Fprintf(&b, "k%d: v\n", i)
	}
	loadWithin(t, b.String(), "hostile.yaml:2001:1: a mapping with more than 2000 keys", 64<<10)
}

// The parser spends over a kilobyte on every value.
func TestAFileWithTooManyValuesIsRejectedWithinABudget(t *testing.T) {
	loadWithin(t, "a: &a x\nb: ["+strings.Repeat("*a, ", 250_000)+"]\n", "more than 100000 YAML values", 64<<10)
}

// Aliases are converted as shared nodes and counted expanded before any
// value is built from them: a billion laughs costs what its text costs.
func TestAnAliasBombIsRejectedWithinABudget(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("testdata", "bad", "alias-bomb.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	loadWithin(t, string(src), "aliases expand this file to more than 200000 values", 4<<20)
}

// A file is read only if it is regular, and only up to the limit.
func TestAFileOverTheSizeLimitIsRefusedWithoutReadingIt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "huge.yaml")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	// Sparse: 64 MiB that cost no disk.
	if err := f.Truncate(64 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	n := budget.Allocated(func() { _, err = scenarios.LoadFile(path) })
	if !errors.Is(err, scenarios.ErrLoad) || !errors.Is(err, inputfile.ErrTooLarge) {
		t.Fatalf("got %v, want ErrLoad and ErrTooLarge", err)
	}
	want := "larger than 4194304 bytes (4 MiB), the limit for a scenario file; raise it with --max-file-size (scenarios.MaxFileSize in Go)"
	if !strings.HasSuffix(err.Error(), want) {
		t.Errorf("got %q, want it to end %q", err, want)
	}
	if n > 64<<10 {
		t.Errorf("refusing a 64 MiB file allocated %d bytes", n)
	}
	big := make([]byte, scenarios.MaxFileSize+1)
	n = budget.Allocated(func() { _, err = scenarios.Load("given.yaml", big) })
	if n > 64<<10 {
		t.Errorf("refusing bytes over the limit allocated %d bytes", n)
	}
	if err == nil || err.Error() != "given.yaml:1:1: "+want {
		t.Errorf("Load of bytes over the limit: %v", err)
	}
}

func TestADeviceOrAFIFOIsRefusedAtOnce(t *testing.T) {
	var err error
	n := budget.Allocated(func() { _, err = scenarios.LoadFile("/dev/zero") })
	if !errors.Is(err, inputfile.ErrNotRegular) || err.Error() != "bad scenario file /dev/zero: not a regular file: it is a character device, and crux-sim reads only regular files" {
		t.Fatalf("got %v", err)
	}
	if n > 64<<10 {
		t.Errorf("refusing /dev/zero allocated %d bytes", n)
	}
	fifo := filepath.Join(t.TempDir(), "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no FIFOs: %v", err)
	}
	if _, err := scenarios.LoadFile(fifo); !errors.Is(err, inputfile.ErrNotRegular) {
		t.Fatalf("a FIFO: got %v", err)
	}
}

// The pre-scan reads YAML's lexical structure only; brackets inside
// strings, comments and block scalars are text, and a real scenario passes.
func TestThePreScanCountsOnlyStructure(t *testing.T) {
	text := strings.Repeat("[", 500)
	src := "name: x # " + text + "\n" +
		"description: \"" + text + "\"\n" +
		"tags: ['" + text + "', \"a\\\"" + text + "\"]\n" +
		"agents:\n  a:\n    prompt:\n      system: |\n        " + text + "\n        " + text + "\n      template: plain" + text + "\n"
	_, err := scenarios.Load("ok.yaml", []byte(src))
	if err != nil && strings.Contains(err.Error(), "nested") {
		t.Fatalf("brackets in text were counted as nesting: %v", err)
	}
	for _, in := range scenarios.Builtins() {
		if _, err := scenarios.Builtin(in.Name); err != nil {
			t.Errorf("built-in %s: %v", in.Name, err)
		}
	}
}
