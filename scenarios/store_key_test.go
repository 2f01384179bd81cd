package scenarios_test

import (
	"errors"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	. "github.com/crux-sim/crux-sim/scenarios"
)

var _ = Describe("A platform scenario's store key", func() {
	load := func(storeLine string) (*Scenario, error) {
		return Load("store.yaml", []byte("name: store\nagents: {coordinator: {}}\nplatform:\n  "+storeLine+"\n  sessions: [{agent: coordinator}]\n"))
	}

	It("names the durable store each run opens fresh: memory by default, or a PostgreSQL server", func() {
		sc, err := load("horizon: 1h")
		Expect(err).NotTo(HaveOccurred())
		Expect(sc.Platform.Store.IsZero()).To(BeTrue())
		for line, want := range map[string]string{
			"store: memory":   "memory",
			"store: postgres": "postgres",
			"store: postgres://crux@127.0.0.1:5432/tests": "postgres://crux@127.0.0.1:5432/tests",
		} {
			sc, err := load(line)
			Expect(err).NotTo(HaveOccurred(), line)
			Expect(sc.Platform.Store.String()).To(Equal(want))
		}
	})

	It("refuses an unknown store, and a password in the file, at the key's line and column without echoing the password", func() {
		_, err := load("store: mysql")
		var le *LoadError
		Expect(errors.As(err, &le)).To(BeTrue())
		Expect(le.Problems).To(HaveLen(1))
		Expect(le.Problems[0]).To(And(HaveField("Line", 4), HaveField("Col", 10)))
		Expect(le.Problems[0].Message).To(ContainSubstring(`want memory, postgres`))

		_, err = load("store: postgres://crux:hunter2@db/tests")
		Expect(errors.As(err, &le)).To(BeTrue())
		Expect(le.Problems).To(HaveLen(1))
		Expect(le.Problems[0].Line).To(Equal(4))
		Expect(le.Problems[0].Message).To(ContainSubstring("a password does not belong in a scenario file"))
		Expect(err.Error()).NotTo(ContainSubstring("hunter2"))
	})
})
