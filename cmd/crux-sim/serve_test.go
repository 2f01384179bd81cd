package main

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"testing"
)

// Bad usage and bad input make crux-sim serve exit 2 with a message, before
// it listens: nothing is served that could not be judged.
func TestServeExitsTwoOnBadUsageBeforeItListens(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve"}, "serve needs a scenario"},
		{[]string{"serve", "no-such-scenario"}, "no-such-scenario"},
		{[]string{"serve", "loop-week"}, "it is a platform scenario"},
		{[]string{"serve", "--idle-timeout", "-1s", "research-coordinator"}, "--idle-timeout must be 0 (none) or more"},
		{[]string{"serve", "--addr", "127.0.0.1:99999", "research-coordinator"}, "--addr 127.0.0.1:99999"},
		{[]string{"serve", "--cassette", "/nonexistent.cassette"}, "nonexistent.cassette"},
	} {
		code, out, errOut := cli(tc.args...)
		if code != exitBadUsage || !strings.Contains(errOut, tc.want) || out != "" {
			t.Errorf("crux-sim %s: exit %d, stdout %q, stderr %q; want exit 2 and %q on stderr alone", strings.Join(tc.args, " "), code, out, errOut, tc.want)
		}
	}
}

// The verb prints the address first, serves, and ends on POST
// /crux-sim/finish with the report and the exit code of the verdicts.
func TestServePrintsItsAddressFirstAndEndsOnFinish(t *testing.T) {
	r, w := io.Pipe()
	done := make(chan int, 1)
	var errOut strings.Builder
	go func() {
		code := Main([]string{"serve", "research-coordinator"}, w, &errOut)
		w.Close()
		done <- code
	}()
	lines := bufio.NewReader(r)
	first, err := lines.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	base, ok := strings.CutPrefix(strings.TrimSpace(first), "listening on ")
	if !ok || !strings.HasPrefix(base, "http://127.0.0.1:") || !strings.HasSuffix(base, "/v1") {
		t.Fatalf("first line %q", first)
	}
	rest := make(chan string, 1)
	go func() { b, _ := io.ReadAll(lines); rest <- string(b) }()
	resp, err := http.Post(strings.TrimSuffix(base, "/v1")+"/crux-sim/finish", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"passed": false`) {
		t.Errorf("finish answered %d %s", resp.StatusCode, body)
	}
	report := <-rest
	if code := <-done; code != exitFailed {
		t.Errorf("exit %d, want 1: no request made, so the expectations failed\n%s%s", code, report, errOut.String())
	}
	for _, want := range []string{"== research-coordinator · served ==", "FAIL research-coordinator (served): 2 of 6 expectations held", "session ended by POST /crux-sim/finish"} {
		if !strings.Contains(report, want) {
			t.Errorf("the report lacks %q:\n%s", want, report)
		}
	}
}
