package archtest_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// outside names what a user of this repository does not have: the files the
// project was specified in and their shorthand ("seed 02" reads like a --seed
// value besides).
var outside = regexp.MustCompile(`(?i)shared/|\bseeds?/|DESIGN\.md|DESIGN §|\bDESIGN\b|\bseed[ -]?0[0-9]\b|\bseed0[0-9]\b|seeds? 0[0-9]`)

// mdLink is a Markdown link's target.
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// userDocs are the README and every page of docs/.
func userDocs() []string {
	pages, err := filepath.Glob("../../docs/*.md")
	Expect(err).NotTo(HaveOccurred())
	return append([]string{"../../README.md"}, pages...)
}

// outsideReferences lists, as "file:line: text", every line of a page that
// names a file outside the repository, and every relative link to a file
// the repository does not have.
func outsideReferences(name, src string) []string {
	var bad []string
	for i, line := range strings.Split(src, "\n") {
		if m := outside.FindString(line); m != "" {
			bad = append(bad, name+":"+itoa(i+1)+": names "+m+": "+strings.TrimSpace(line))
		}
		for _, l := range mdLink.FindAllStringSubmatch(line, -1) {
			target, _, _ := strings.Cut(l[1], "#")
			if target == "" || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path := filepath.Join(filepath.Dir(name), target)
			rel, err := filepath.Rel("../..", path)
			if err != nil || strings.HasPrefix(rel, "..") {
				bad = append(bad, name+":"+itoa(i+1)+": links outside the repository: "+l[1])
				continue
			}
			if _, err := os.Stat(path); err != nil {
				bad = append(bad, name+":"+itoa(i+1)+": links to a file the repository lacks: "+l[1])
			}
		}
	}
	return bad
}

func itoa(n int) string { return strconv.Itoa(n) }

var _ = Describe("the docs stand alone", func() {
	It("the README and docs/ name no file outside the repository and no shorthand for one, and link only to files the repository has", func() {
		var bad []string
		for _, page := range userDocs() {
			src, err := os.ReadFile(page)
			Expect(err).NotTo(HaveOccurred())
			bad = append(bad, outsideReferences(page, string(src))...)
		}
		Expect(bad).To(BeEmpty())
	})

	It("the check finds each kind of outside reference", func() {
		for _, line := range []string{
			"see shared/seeds/01-backgroundable-agent-work.txt",
			"as DESIGN.md says",
			"(DESIGN §3)",
			"seed 02's research coordinator",
			"Seed 03 durable tasks",
			"[the design](../../DESIGN.md)",
			"[gone](nowhere.md)",
		} {
			Expect(outsideReferences("../../docs/x.md", line)).NotTo(BeEmpty(), line)
		}
		Expect(outsideReferences("../../docs/x.md", "run with --seed 7; see [the contract](contract.md#send)")).To(BeEmpty())
	})

	It("the background Work contract is written out in docs/contract.md, and the rule-to-spec map points at it", func() {
		contract, err := os.ReadFile("../../docs/contract.md")
		Expect(err).NotTo(HaveOccurred())
		for _, section := range []string{"## The child's tool", "## The automatic `work` tool", "### list and status", "### result", "### cancel", "### send", "### detach", "## Status before every model request", "## Isolation", "## Lifetime"} {
			Expect(string(contract)).To(ContainSubstring(section + "\n"))
		}
		semantics, err := os.ReadFile("../../docs/semantics.md")
		Expect(err).NotTo(HaveOccurred())
		Expect(strings.Count(string(semantics), "](contract.md#")).To(BeNumerically(">=", 10))
	})
})
