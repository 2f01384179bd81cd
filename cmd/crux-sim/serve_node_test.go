package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// tsClient is the example coordinator on the official openai package.
var tsClient = filepath.Join("..", "..", "harness", "serve", "testdata", "ts-client")

// needNode skips a test without Node and the client's packages, unless
// CRUX_SIM_REQUIRE_NODE=1 (CI sets it) makes that a failure.
func needNode(t *testing.T) string {
	t.Helper()
	missing := func(why string) {
		if os.Getenv("CRUX_SIM_REQUIRE_NODE") == "1" {
			t.Fatalf("%s, and CRUX_SIM_REQUIRE_NODE=1 requires the real-client test to run", why)
		}
		t.Skipf("skipping the real-client test: %s (install Node and run npm ci in %s to run it; CI does)", why, tsClient)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node is not on PATH")
	}
	if _, err := os.Stat(filepath.Join(tsClient, "node_modules", "openai")); err != nil {
		missing("the client's packages are not installed")
	}
	return node
}

// TestServeJudgesARealTypeScriptClient runs the example TypeScript
// coordinator, on the official openai package and its own background Work
// runtime, against crux-sim serve research-coordinator, as a user would:
// the built binary, a real loopback port, the client as a process. The
// client that keeps the contract passes (exit 0, ended by POST
// /crux-sim/finish); the one that puts the child's output into its status
// block fails (exit 1, ended by SIGTERM) with the expectation and the
// invariant that name the leak.
func TestServeJudgesARealTypeScriptClient(t *testing.T) {
	node := needNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	run := func(dir string, name string, args ...string) {
		t.Helper()
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
	}
	run(tsClient, node, filepath.Join("node_modules", "typescript", "bin", "tsc"), "-p", ".")
	bin := filepath.Join(t.TempDir(), "crux-sim")
	run(".", "go", "build", "-o", bin, ".")

	for _, tc := range []struct {
		name    string
		flags   []string
		end     string // finish or sigterm
		exit    int
		want    []string
		wantNot []string
	}{
		{name: "keeps the contract", end: "finish", exit: 0,
			want: []string{
				"PASS the recipe's five steps, in order",
				"PASS step 3: status is safe: no status row carries the child's output",
				"PASS step 5: only the work result round carries the child's exact output",
				"PASS research-coordinator (served): 6 of 6 expectations held",
				"session ended by POST /crux-sim/finish",
			},
			wantNot: []string{"FAIL"}},
		{name: "leaks the child's output into its status block", flags: []string{"--leak-status"}, end: "sigterm", exit: 1,
			want: []string{
				"FAIL step 3: status is safe: no status row carries the child's output",
				`FAIL invariant "no-child-content-in-status" broken at entry #`,
				`FAIL invariant "status-format" broken at entry #`,
				"FAIL research-coordinator (served): 5 of 6 expectations held, 2 invariant violations",
				"session ended by a signal",
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout bytes.Buffer
			srv := exec.CommandContext(ctx, bin, "serve", "research-coordinator")
			pipe, err := srv.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			srv.Stderr = os.Stderr
			if err := srv.Start(); err != nil {
				t.Fatal(err)
			}
			lines := bufio.NewReader(pipe)
			first, err := lines.ReadString('\n')
			if err != nil {
				t.Fatalf("serve printed no first line: %v", err)
			}
			url, ok := strings.CutPrefix(strings.TrimSpace(first), "listening on http://127.0.0.1:")
			if !ok || !strings.HasSuffix(url, "/v1") {
				t.Fatalf("the first line is %q, want listening on http://127.0.0.1:PORT/v1", first)
			}
			base := strings.TrimPrefix(strings.TrimSpace(first), "listening on ")
			rest := make(chan struct{})
			go func() { _, _ = stdout.ReadFrom(lines); close(rest) }()

			client := exec.CommandContext(ctx, node, append([]string{filepath.Join("dist", "coordinator.js")}, tc.flags...)...)
			client.Dir = tsClient
			client.Env = append(os.Environ(), "OPENAI_BASE_URL="+base)
			out, err := client.CombinedOutput()
			if err != nil {
				t.Fatalf("the client failed: %v\n%s", err, out)
			}
			if !strings.Contains(string(out), "anthocyanins") {
				t.Errorf("the client's answer is %q", out)
			}

			switch tc.end {
			case "finish":
				resp, err := http.Post(strings.TrimSuffix(base, "/v1")+"/crux-sim/finish", "application/json", nil)
				if err != nil {
					t.Fatal(err)
				}
				var verdicts struct {
					Passed   bool              `json:"passed"`
					Verdicts []json.RawMessage `json:"verdicts"`
				}
				err = json.NewDecoder(resp.Body).Decode(&verdicts)
				resp.Body.Close()
				if err != nil || !verdicts.Passed || len(verdicts.Verdicts) != 6 {
					t.Errorf("the finish response is %+v (%v), want 6 verdicts, passed", verdicts, err)
				}
			case "sigterm":
				if err := srv.Process.Signal(syscall.SIGTERM); err != nil {
					t.Fatal(err)
				}
			}
			<-rest
			err = srv.Wait()
			code := 0
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				code = exit.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			report := stdout.String()
			if code != tc.exit {
				t.Errorf("serve exited %d, want %d\n%s", code, tc.exit, report)
			}
			for _, w := range tc.want {
				if !strings.Contains(report, w) {
					t.Errorf("the report lacks %q\n%s", w, report)
				}
			}
			for _, w := range tc.wantNot {
				if strings.Contains(report, w) {
					t.Errorf("the report has %q\n%s", w, report)
				}
			}
		})
	}
}
