package harness_test

import (
	"bytes"
	"testing"

	"github.com/sebdah/goldie/v2"

	"github.com/crux-sim/crux-sim/harness"
	"github.com/crux-sim/crux-sim/scenarios"
)

// TestBuiltinTranscriptsMatchGoldenFiles renders every built-in scenario at
// seed 1 and compares it with golden/<name>.txt. Refresh the files after an
// intended change with: go test ./harness -run Golden -update
func TestBuiltinTranscriptsMatchGoldenFiles(t *testing.T) {
	g := goldie.New(t, goldie.WithFixtureDir("../golden"), goldie.WithNameSuffix(".txt"))
	for _, b := range scenarios.Builtins() {
		t.Run(b.Name, func(t *testing.T) {
			sc, err := scenarios.Builtin(b.Name)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			o := harness.Run(sc, harness.Options{Seed: 1})
			if err := harness.WriteReport(&out, o); err != nil {
				t.Fatal(err)
			}
			if !o.Passed() {
				t.Errorf("built-in %s does not pass at seed 1:\n%s", b.Name, out.String())
			}
			g.Assert(t, b.Name, out.Bytes())
		})
	}
}
