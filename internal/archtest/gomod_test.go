package archtest_test

import (
	"os"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// goDirective returns go.mod's go line and whether it names a toolchain.
func goDirective(src []byte) (string, bool) {
	version, toolchain := "", false
	for _, line := range strings.Split(string(src), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 2 && f[0] == "go":
			version = f[1]
		case len(f) >= 1 && f[0] == "toolchain":
			toolchain = true
		}
	}
	return version, toolchain
}

var _ = Describe("go.mod", func() {
	It("says go 1.26, not a patch release, and names no toolchain, so that importers are not forced onto a patch release", func() {
		src, err := os.ReadFile("../../go.mod")
		Expect(err).NotTo(HaveOccurred())
		version, toolchain := goDirective(src)
		Expect(version).To(Equal("1.26"))
		Expect(toolchain).To(BeFalse(), "go.mod has a toolchain line")
	})

	It("the check fails on a patch release", func() {
		version, toolchain := goDirective([]byte("module m\n\ngo 1.26.8\n\ntoolchain go1.26.8\n"))
		Expect(version).To(Equal("1.26.8"))
		Expect(toolchain).To(BeTrue())
	})
})
