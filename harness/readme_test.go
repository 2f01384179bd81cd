package harness_test

import (
	"os"
	"strings"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/harness"
	"github.com/crux-sim/crux-sim/scenarios"
)

// The README's ten-line example, verbatim between the markers; the test
// below checks the README still shows exactly these lines.
var _ = Describe("the README", func() {
	// README example begins
	It("rejoins background research only through work result", func() {
		sc, _ := scenarios.Builtin("research-coordinator") // or scenarios.New(...) with your own agents
		run := harness.Run(sc, harness.Options{Seed: 7})
		Expect(run).To(scenarios.ReturnWorkRef("research"))
		Expect(run).To(scenarios.HaveStatusRow("research-coordinator", scenarios.RowPattern{Label: "research", State: "running"}))
		Expect(run).To(scenarios.CallWork("research-coordinator", "result"))
		Expect(run).To(scenarios.DeliverOutputOnlyThroughResult("research"))
		Expect(run).To(scenarios.Pass()) // every expectation held; a failure names the root cause and each nearest miss
	})
	// README example ends
})

// TestTheREADMEShowsTheExampleThatRuns keeps the README's Ginkgo example in
// step with the spec above, which the suite runs.
func TestTheREADMEShowsTheExampleThatRuns(t *testing.T) {
	src, err := os.ReadFile("readme_test.go")
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	begin := strings.Index(s, "// README example begins\n")
	end := strings.Index(s, "\t// README example ends")
	example := s[begin+len("// README example begins\n") : end]
	var lines []string
	for _, line := range strings.Split(strings.TrimRight(example, "\n"), "\n") {
		lines = append(lines, strings.TrimPrefix(line, "\t"))
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Join(lines, "\n")
	if !strings.Contains(string(readme), want) {
		t.Errorf("README.md does not show the example that runs; it should contain:\n%s", want)
	}
}
