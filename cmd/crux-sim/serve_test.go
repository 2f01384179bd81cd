package main

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/crux-sim/crux-sim/harness"
	"github.com/crux-sim/crux-sim/scenarios"
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

// serveCLI starts crux-sim serve with args and returns its base URL (from
// the first line of standard output) and a finish that ends the session
// with POST /crux-sim/finish and returns its body, the exit code, the rest
// of standard output, and standard error.
func serveCLI(t *testing.T, args ...string) (base string, finish func() (body string, code int, report, errOut string)) {
	t.Helper()
	r, w := io.Pipe()
	done := make(chan int, 1)
	var errOut strings.Builder
	go func() {
		code := Main(append([]string{"serve"}, args...), w, &errOut)
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
	return base, func() (string, int, string, string) {
		resp, err := http.Post(strings.TrimSuffix(base, "/v1")+"/crux-sim/finish", "application/json", nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("finish answered %d %s", resp.StatusCode, body)
		}
		report := <-rest
		code := <-done
		return string(body), code, report, errOut.String()
	}
}

// The verb prints the address first, serves, and ends on POST
// /crux-sim/finish with the report and the exit code of the verdicts.
func TestServePrintsItsAddressFirstAndEndsOnFinish(t *testing.T) {
	_, finish := serveCLI(t, "research-coordinator")
	body, code, report, errOut := finish()
	if !strings.Contains(body, `"passed": false`) {
		t.Errorf("finish answered %s", body)
	}
	if code != exitFailed {
		t.Errorf("exit %d, want 1: no request made, so the expectations failed\n%s%s", code, report, errOut)
	}
	for _, want := range []string{"== research-coordinator · served ==", "FAIL research-coordinator (served): 2 of 6 expectations held", "session ended by POST /crux-sim/finish"} {
		if !strings.Contains(report, want) {
			t.Errorf("the report lacks %q:\n%s", want, report)
		}
	}
}

// flakySolo is a scenario whose one provider error fires under some seeds,
// and whose crash no client's runtime can suffer.
const flakySolo = `name: flaky-solo
agents:
  solo:
    prompt:
      system: Say hi.
run:
  agents: {solo: solo}
script:
  solo:
    - text: hi
faults:
  - provider-error: {agent: solo, step: 1, message: upstream 503, probability: 0.5}
  - crash: {after: {request: {agent: solo, step: 1}}}
expect:
  - outcome: {agent: solo}
`

// --seed chooses the provider faults that fire as crux-sim run --seed does;
// a fault that acts inside the runtime is named on standard error at
// start-up, after the address line, and as a finding in the report.
func TestServeFiresTheSeedsProviderFaultsAndNamesTheOnesItCannotApply(t *testing.T) {
	path := filepath.Join(t.TempDir(), "flaky.yaml")
	if err := os.WriteFile(path, []byte(flakySolo), 0o600); err != nil {
		t.Fatal(err)
	}
	scs, err := loadScenarios([]string{path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	fires := map[bool]int64{}
	for seed := int64(1); seed <= 20 && len(fires) < 2; seed++ {
		fired := false
		for _, f := range harness.Run(scs[0], harness.Options{Seed: seed}).Fired.Faults {
			fired = fired || f.Kind == scenarios.FaultProviderError
		}
		if _, ok := fires[fired]; !ok {
			fires[fired] = seed
		}
	}
	if len(fires) != 2 {
		t.Fatalf("no seed of 20 both fires and skips the provider error: %v", fires)
	}
	const unapplied = "crux-sim serve: fault 2 (crash) acts inside the runtime, which is the client's own under serve: not applied\n"
	for _, fired := range []bool{true, false} {
		seed := strconv.FormatInt(fires[fired], 10)
		base, finish := serveCLI(t, "--seed", seed, path)
		resp, err := http.Post(base+"/chat/completions", "application/json",
			strings.NewReader(`{"model":"crux-sim/solo","messages":[{"role":"user","content":"hi"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		answer, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		_, code, report, errOut := finish()
		want, outcome := http.StatusOK, exitOK
		if fired {
			want, outcome = http.StatusInternalServerError, exitFailed
		}
		if resp.StatusCode != want || fired != strings.Contains(string(answer), "injected provider error: upstream 503") {
			t.Errorf("--seed %s (fires: %v): answered %d %s", seed, fired, resp.StatusCode, answer)
		}
		if code != outcome {
			t.Errorf("--seed %s: exit %d, want %d\n%s", seed, code, outcome, report)
		}
		if errOut != unapplied {
			t.Errorf("--seed %s: standard error %q, want %q", seed, errOut, unapplied)
		}
		if !strings.Contains(report, "fault 2 (crash) acts inside the runtime") {
			t.Errorf("--seed %s: the report has no finding for the crash:\n%s", seed, report)
		}
	}
}
