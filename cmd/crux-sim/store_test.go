package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crux-sim/crux-sim/internal/fixture"
	"github.com/crux-sim/crux-sim/platform/store"
	"github.com/crux-sim/crux-sim/scenarios"
)

// crux-sim run and fuzz --store run a platform scenario on a PostgreSQL
// store, each run on a schema of its own, with the transcript the memory
// store gives.
func TestRunAndFuzzRunAPlatformScenarioOnAPostgreSQLStore(t *testing.T) {
	dsn := fixture.Postgres(t)
	code, onMemory := runCLI(t, "run", "task-dag-crash")
	if code != 0 {
		t.Fatalf("run task-dag-crash exited %d:\n%s", code, onMemory)
	}
	code, onPostgres := runCLI(t, "run", "--store", dsn, "task-dag-crash")
	if code != 0 {
		t.Fatalf("run --store %s task-dag-crash exited %d:\n%s", dsn, code, onPostgres)
	}
	if onPostgres != onMemory {
		t.Errorf("the report on PostgreSQL differs from the report on memory:\n%s\n---\n%s", onPostgres, onMemory)
	}
	code, out := runCLI(t, "fuzz", "--store", dsn, "--seeds", "20", "--jobs", "2", "--out", t.TempDir(), "task-dag-crash")
	if code != 0 {
		t.Fatalf("fuzz --store exited %d:\n%s", code, out)
	}
	if m := summaryLine.FindStringSubmatch(out); m == nil || m[1] != "20" || m[2] != "0" {
		t.Errorf("want 20 schedules and no failures:\n%s", out)
	}
}

// A store the flag cannot use is bad usage (exit 2), told before anything
// runs, and the message never shows a password.
func TestTheStoreFlagRefusesAStoreItCannotUseAsBadUsageWithoutThePassword(t *testing.T) {
	for _, tc := range []struct{ store, want string }{
		{"mysql://db/x", "want memory, postgres"},
		{"postgres://crux:s3cret@127.0.0.1:1/db?sslmode=disable&connect_timeout=5", "--store postgres://crux:xxxxx@127.0.0.1:1/db"},
	} {
		for _, verb := range []string{"run", "fuzz"} {
			code, stdout, stderr := cli(verb, "--store", tc.store, "task-dag-crash")
			if code != 2 {
				t.Errorf("%s --store %s exited %d, want 2:\n%s%s", verb, tc.store, code, stdout, stderr)
			}
			if !strings.Contains(stderr, tc.want) || strings.Contains(stdout+stderr, "s3cret") {
				t.Errorf("%s --store %s: want %q on stderr and no password anywhere:\n%s%s", verb, tc.store, tc.want, stdout, stderr)
			}
		}
	}
}

// A PostgreSQL server a scenario file names (platform.store) that cannot
// be reached is bad input too (exit 2), told before anything runs and
// naming the file, as --store's is, not a run whose every expectation
// fails for want of a store.
func TestAScenarioStoreThatCannotBeReachedIsBadInputNamingTheFile(t *testing.T) {
	src, ok := scenarios.BuiltinSource("task-dag-crash")
	if !ok {
		t.Fatal("no built-in task-dag-crash")
	}
	withStore := strings.Replace(string(src), "\nplatform:\n", "\nplatform:\n  store: postgres://crux@127.0.0.1:1/db?sslmode=disable&connect_timeout=5\n", 1)
	if withStore == string(src) {
		t.Fatal("the built-in has no platform section to name a store in")
	}
	path := filepath.Join(t.TempDir(), "dag.yaml")
	if err := os.WriteFile(path, []byte(withStore), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, verb := range []string{"run", "fuzz", "report"} {
		args := []string{verb, path}
		if verb == "report" {
			args = append(args, "-o", filepath.Join(t.TempDir(), "r.html"))
		}
		code, stdout, stderr := cli(args...)
		if code != 2 || !strings.Contains(stderr, path+": platform store postgres://crux@127.0.0.1:1/db") {
			t.Errorf("%s of a scenario whose store cannot be reached exited %d, want 2 naming the file:\n%s%s", verb, code, stdout, stderr)
		}
	}
}

// A reproduce command names the store the failing run used, its password
// hidden (the user gives it again through PGPASSWORD or ~/.pgpass).
func TestAReproduceCommandNamesTheStoreWithoutItsPassword(t *testing.T) {
	b, err := store.ParseBackend("postgres://crux:s3cret@db:5432/tests")
	if err != nil {
		t.Fatal(err)
	}
	got := reproduce(7, true, nil, b, "task-dag-crash", false)
	if want := "crux-sim run --seed 7 --swarm --store postgres://crux:xxxxx@db:5432/tests task-dag-crash"; got != want {
		t.Errorf("reproduce = %q, want %q", got, want)
	}
	if got := reproduce(7, false, nil, store.Backend{}, "task-dag-crash", false); got != "crux-sim run --seed 7 task-dag-crash" {
		t.Errorf("without a store, reproduce = %q", got)
	}
}
