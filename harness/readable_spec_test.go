package harness_test

import (
	"bytes"
	"regexp"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/harness"
	"github.com/crux-sim/crux-sim/scenarios"
)

// More than three decimals of a second: finer than the default resolution.
var finerThanAMillisecond = regexp.MustCompile(`\+?\d+(h\d+m)?(\d+m)?\d+\.\d{4,}s`)

var _ = Describe("a transcript a person can read", func() {
	It("shows virtual offsets, clock jumps and drawn latencies at the scenario's resolution", func() {
		for _, name := range []string{"result-timeout", "cancel-vs-complete", "loop-week"} {
			sc, err := scenarios.Builtin(name)
			Expect(err).NotTo(HaveOccurred())
			for seed := int64(1); seed <= 4; seed++ {
				var b bytes.Buffer
				Expect(harness.WriteReport(&b, harness.Run(sc, harness.Options{Seed: seed, Swarm: true}))).To(Succeed())
				Expect(finerThanAMillisecond.FindString(b.String())).To(BeEmpty(), "%s seed %d:\n%s", name, seed, b.String())
			}
		}
	})

	It("a scenario may choose a coarser resolution", func() {
		src, _ := scenarios.BuiltinSource("result-timeout")
		sc, err := scenarios.Load("coarse.yaml", append(bytes.Clone(src), []byte("options: {resolution: 1s}\n")...))
		Expect(err).NotTo(HaveOccurred())
		var b bytes.Buffer
		Expect(harness.WriteReport(&b, harness.Run(sc, harness.Options{Seed: 1}))).To(Succeed())
		Expect(b.String()).To(ContainSubstring("fault latency 1s on research-agent step 1"))
		Expect(b.String()).NotTo(ContainSubstring("1.482s"))
	})
})
