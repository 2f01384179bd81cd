package harness_test

import (
	"context"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/harness"
	"github.com/crux-sim/crux-sim/internal/budget"
	"github.com/crux-sim/crux-sim/internal/inputfile"
	"github.com/crux-sim/crux-sim/scenarios"
)

// reservedChild is a scenario whose preparation fails: its backgroundable
// child declares run_in_background.
func reservedChild(expect string) string {
	return `name: reserved-child
agents:
  child:
    prompt:
      input: {type: object, properties: {run_in_background: {type: string}}}
      template: x
  coord:
    prompt: {template: go}
    tools:
      kid: {background: child}
run:
  agents: {c: coord}
script:
  coord:
    - text: done
` + expect
}

var _ = Describe("clear verdicts", func() {
	It("fails a scenario whose preparation fails when it does not expect that", func() {
		o := harness.Run(load(reservedChild("")), harness.Options{Seed: 1})
		Expect(o.PrepareErr).To(MatchError(core.ErrReservedField))
		Expect(o.Passed()).To(BeFalse())
		Expect(transcript(o)).To(ContainSubstring("FAIL preparation succeeds\n     preparation failed, so nothing ran: "))
	})

	It("passes it when it expects prepare-fails, in the file or in Go", func() {
		o := harness.Run(load(reservedChild("expect:\n  - prepare-fails: {contains: run_in_background}\n")), harness.Options{Seed: 1})
		Expect(o.Passed()).To(BeTrue(), transcript(o))

		sc := load(reservedChild(""))
		sc.Expect(scenarios.Named{Name: "rejected", Expectation: scenarios.PrepareFails{Is: core.ErrReservedField}})
		Expect(sc.ExpectsPrepareFailure()).To(BeTrue())
		Expect(harness.Run(sc, harness.Options{Seed: 1}).Passed()).To(BeTrue())
	})

	It("counts a preparation failure as a failure in a fuzz campaign", func() {
		target := harness.Target{Name: "reserved-child", Load: func() (*scenarios.Scenario, error) {
			return scenarios.Load("spec.yaml", []byte(reservedChild("")))
		}}
		res := harness.Fuzz(context.Background(), []harness.Target{target}, harness.CampaignOptions{Seeds: 3, Jobs: 1, ShrinkRuns: 5})
		Expect(res.Failures).To(HaveLen(1))
		Expect(res.Failures[0].Signature).To(ContainSubstring("preparation succeeds"))
	})
})

var _ = Describe("fuzz seed ranges", func() {
	It("refuses a range that runs past the largest seed, and runs the last seeds there are", func() {
		const maxSeed = int64(^uint64(0) >> 1)
		Expect(harness.CampaignOptions{Start: maxSeed - 1, Seeds: 3}.CheckSeeds()).To(MatchError(ContainSubstring("runs past the largest seed")))
		Expect(harness.CampaignOptions{Start: 1, Seeds: 0}.CheckSeeds()).To(HaveOccurred())
		opts := harness.CampaignOptions{Start: maxSeed - 2, Seeds: 3, Jobs: 1}
		Expect(opts.CheckSeeds()).To(Succeed())
		res := harness.Fuzz(context.Background(), []harness.Target{{Name: "queued-cancel", Load: func() (*scenarios.Scenario, error) {
			return scenarios.Builtin("queued-cancel")
		}}}, opts)
		Expect(res.Schedules).To(Equal(int64(3)))
	})
})

var _ = Describe("schedule files", func() {
	// plantedFailure fuzzes a copy of cancel-vs-complete in its own
	// directory with a planted defect and returns the failure.
	plantedFailure := func(scenarioPath string) *harness.CampaignFailure {
		GinkgoHelper()
		target := harness.Target{Name: scenarioPath, Load: func() (*scenarios.Scenario, error) { return scenarios.LoadFile(scenarioPath) }}
		res := harness.Fuzz(context.Background(), []harness.Target{target}, harness.CampaignOptions{Seeds: 200, Jobs: 2, MaxFailures: 1,
			Testing: core.Testing{Defects: core.Defects{CancelOverwritesTerminal: true}}})
		Expect(res.Failures).NotTo(BeEmpty())
		return res.Failures[0]
	}
	writeScenario := func(dir string) string {
		GinkgoHelper()
		src, _ := scenarios.BuiltinSource("cancel-vs-complete")
		Expect(os.MkdirAll(dir, 0o755)).To(Succeed())
		path := filepath.Join(dir, "race.yaml")
		Expect(os.WriteFile(path, src, 0o644)).To(Succeed())
		return path
	}

	It("records a file target relative to the schedule file, with the scenario's digest, and replays it from anywhere", func() {
		dir := GinkgoT().TempDir()
		f := plantedFailure(writeScenario(filepath.Join(dir, "scenarios")))
		path := filepath.Join(dir, "failures", "race.json")
		Expect(os.MkdirAll(filepath.Dir(path), 0o755)).To(Succeed())
		Expect(f.Schedule.WriteFile(path)).To(Succeed())
		raw, _ := os.ReadFile(path)
		Expect(string(raw)).To(ContainSubstring(`"target": "../scenarios/race.yaml"`))
		Expect(string(raw)).To(MatchRegexp(`"digest": "[0-9a-f]{64}"`))

		s, err := harness.ReadSchedule(path)
		Expect(err).NotTo(HaveOccurred())
		sc, err := s.LoadTarget()
		Expect(err).NotTo(HaveOccurred())
		o := s.Replay(sc)
		Expect(s.Fits(o)).To(Succeed())
		Expect(harness.Signature(o)).To(Equal(f.Signature))
	})

	It("refuses a target that changed since, before parsing it", func() {
		dir := GinkgoT().TempDir()
		scenario := writeScenario(dir)
		f := plantedFailure(scenario)
		path := filepath.Join(dir, "race.json")
		Expect(f.Schedule.WriteFile(path)).To(Succeed())
		Expect(os.WriteFile(scenario, []byte("name: [not, a, scenario\n"), 0o644)).To(Succeed())
		s, err := harness.ReadSchedule(path)
		Expect(err).NotTo(HaveOccurred())
		_, err = s.LoadTarget()
		Expect(err).To(MatchError(harness.ErrSchedule))
		Expect(err.Error()).To(ContainSubstring("its SHA-256 differs"))
		Expect(err.Error()).NotTo(ContainSubstring("not, a"))
	})

	It("names the line and column of a malformed schedule file: bad JSON, a value of the wrong type, an unknown key", func() {
		dir := GinkgoT().TempDir()
		for _, c := range []struct{ doc, at string }{
			{"{\n  \"version\": 1\n  \"seed\": 3\n}\n", ":3:3: "},
			{"{\n  \"version\": 1,\n  \"seed\": \"three\"\n}\n", ":3:17: "},
			{"{\n  \"version\": 1,\n  \"seeed\": 3\n}\n", ":3:3: "},
		} {
			path := filepath.Join(dir, "bad.json")
			Expect(os.WriteFile(path, []byte(c.doc), 0o644)).To(Succeed())
			_, err := harness.ReadSchedule(path)
			Expect(err).To(MatchError(harness.ErrSchedule))
			Expect(err.Error()).To(ContainSubstring(path+c.at), c.doc)
		}
	})

	It("refuses a schedule file over its limit without reading it, within a byte budget", func() {
		path := filepath.Join(GinkgoT().TempDir(), "huge.json")
		f, err := os.Create(path)
		Expect(err).NotTo(HaveOccurred())
		Expect(f.Truncate(1 << 30)).To(Succeed()) // sparse: no disk
		Expect(f.Close()).To(Succeed())
		n := budget.Allocated(func() { _, err = harness.ReadSchedule(path) })
		Expect(err).To(MatchError(inputfile.ErrTooLarge))
		Expect(err.Error()).To(ContainSubstring("larger than 67108864 bytes (64 MiB), the limit for a schedule file; raise it with --max-file-size"))
		Expect(n).To(BeNumerically("<", 64<<10))
	})

	It("flags a replayed choice that no runnable actor answers to", func() {
		sc := builtin("queued-cancel")
		s := &harness.ScheduleFile{Version: harness.ScheduleVersion, Scenario: sc.Name, Target: sc.Name, Choices: []int{99}}
		o := s.Replay(sc)
		Expect(o.Misfit).NotTo(BeNil())
		Expect(s.Fits(o)).To(MatchError(ContainSubstring("choice 1 is 99, but only 1 actors could run at that step")))
		Expect(s.Fits(harness.Run(sc, (&harness.ScheduleFile{Choices: []int{0}}).Options()))).To(Succeed())
	})
})
