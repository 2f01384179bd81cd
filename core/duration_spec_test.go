package core_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core"
)

var _ = Describe("Crux durations", func() {
	DescribeTable("read a whole number, optional whitespace, then ms, s, m, h or d",
		func(s string, want time.Duration) {
			Expect(core.ParseDuration(s)).To(Equal(want))
		},
		Entry("250ms", "250ms", 250*time.Millisecond),
		Entry("5s", "5s", 5*time.Second),
		Entry("5 s, a space before the unit", "5 s", 5*time.Second),
		Entry("1 m", "1 m", time.Minute),
		Entry("2\th, a tab before the unit", "2\th", 2*time.Hour),
		Entry("3d", "3d", 72*time.Hour),
		Entry("0s", "0s", time.Duration(0)),
		Entry("the longest duration there is, in days", "106751d", 106751*24*time.Hour),
	)

	DescribeTable("refuse anything else with an error that quotes the input",
		func(s, says string) {
			_, err := core.ParseDuration(s)
			Expect(err).To(HaveOccurred())
			Expect(err.Error()).To(ContainSubstring(says))
		},
		Entry("empty", "", "empty"),
		Entry("no unit", "5", `"5"`),
		Entry("zero without a unit", "0", `"0"`),
		Entry("negative", "-5s", `"-5s"`),
		Entry("a plus sign", "+5s", `"+5s"`),
		Entry("a fraction", "1.5s", `"1.5s"`),
		Entry("a sum of segments", "1m30s", `"1m30s"`),
		Entry("a word for a unit", "5 seconds", `"5 seconds"`),
		Entry("an upper-case unit", "5S", `"5S"`),
		Entry("space before the number", " 5s", `" 5s"`),
		Entry("space after the unit", "5s ", `"5s "`),
		Entry("a sum that overflows", "1281023h1281023h1281023h", `"1281023h1281023h1281023h"`),
		Entry("one segment that overflows", "106752d", "too long"),
		Entry("a number too long for any unit", "99999999999999999999999ms", "too long"),
	)
})
