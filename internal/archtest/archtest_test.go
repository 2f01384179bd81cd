package archtest_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestArchitecture(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "architecture")
}

const module = "github.com/crux-sim/crux-sim/"

// allowed is the one table of arrows: which parts of the module a part may
// import. A package belongs to the part with the longest matching prefix;
// a part may always import its own subpackages. Every arrow points down:
// none points back up to a part that imports it.
var allowed = map[string][]string{
	"cmd/crux-sim":       {"harness", "harness/serve", "harness/cassette", "harness/htmlreport", "scenarios", "scripted", "platform", "sim", "core", "internal"},
	"harness/serve":      {"harness", "harness/cassette", "harness/htmlreport", "scenarios", "scripted", "core", "internal"},
	"harness/htmlreport": {"harness", "core", "internal"},
	"harness/cassette":   {"core", "internal"},
	"harness":            {"scenarios", "scripted", "platform", "sim", "core", "internal"},
	"scenarios":          {"scripted", "platform", "core", "internal"},
	"scripted":           {"core", "internal"},
	"platform":           {"core", "internal"},
	"sim":                {"core"},
	"core":               {"internal"},
	"internal/fixture":   {"scripted", "core", "internal"},
	"internal":           {},
}

// pkg is what go list says of one package.
type pkg struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

// part names the part of the module a package belongs to.
func part(path string) (string, bool) {
	rel, ok := strings.CutPrefix(path, module)
	if !ok {
		return "", false
	}
	best := ""
	for p := range allowed {
		if (rel == p || strings.HasPrefix(rel, p+"/")) && len(p) > len(best) {
			best = p
		}
	}
	return best, best != ""
}

// backArrows returns every import that the table does not allow.
func backArrows(pkgs []pkg) []string {
	var bad []string
	for _, p := range pkgs {
		from, ok := part(p.ImportPath)
		if !ok {
			bad = append(bad, fmt.Sprintf("%s belongs to no part of the table in internal/archtest: place it there and in docs/architecture.md", p.ImportPath))
			continue
		}
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			to, ok := part(imp)
			if !ok || to == from || slices.Contains(allowed[from], to) {
				continue
			}
			bad = append(bad, fmt.Sprintf("%s imports %s: %s may not import %s", strings.TrimPrefix(p.ImportPath, module), strings.TrimPrefix(imp, module), from, to))
		}
	}
	return bad
}

// listModule runs go list over the module's packages (their own imports,
// not their tests').
func listModule() []pkg {
	GinkgoHelper()
	out, err := exec.Command("go", "list", "-json=ImportPath,Imports,Deps", module+"...").Output()
	Expect(err).NotTo(HaveOccurred())
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p pkg
		Expect(dec.Decode(&p)).To(Succeed())
		pkgs = append(pkgs, p)
	}
	Expect(len(pkgs)).To(BeNumerically(">=", 10), "go list listed too few packages for the check to mean anything")
	return pkgs
}

// drawn reads the arrows docs/architecture.md draws: the lines "part →
// a, b, c" of the first fenced block after the heading "## Who may import
// whom".
func drawn() map[string][]string {
	GinkgoHelper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "architecture.md"))
	Expect(err).NotTo(HaveOccurred())
	arrows := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	state := 0 // 0 before the heading, 1 before the block, 2 in it
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case state == 0 && line == "## Who may import whom":
			state = 1
		case state == 1 && strings.HasPrefix(line, "```"):
			state = 2
		case state == 2 && strings.HasPrefix(line, "```"):
			return arrows
		case state == 2 && line != "":
			from, to, ok := strings.Cut(line, "→")
			Expect(ok).To(BeTrue(), "docs/architecture.md: %q is not an arrow line (part → a, b)", line)
			var targets []string
			for _, t := range strings.Split(to, ",") {
				if t = strings.TrimSpace(t); t != "" && t != "nothing" {
					targets = append(targets, t)
				}
			}
			arrows[strings.TrimSpace(from)] = targets
		}
	}
	Fail("docs/architecture.md has no fenced block of arrows under \"## Who may import whom\"")
	return nil
}

func sorted(m map[string][]string) map[string][]string {
	out := map[string][]string{}
	for k, v := range m {
		var c []string // nothing is nil, however it was written
		c = append(c, v...)
		sort.Strings(c)
		out[k] = c
	}
	return out
}

var _ = Describe("the direction of imports", func() {
	It("every import in the module follows an arrow of the table: none points back up", func() {
		Expect(backArrows(listModule())).To(BeEmpty())
	})

	It("the check fails when an arrow points back up, or a package is in no part", func() {
		pkgs := []pkg{
			{ImportPath: module + "core", Imports: []string{module + "core/lifecycle", module + "scenarios"}},
			{ImportPath: module + "sim", Imports: []string{module + "core", module + "scripted"}},
			{ImportPath: module + "scenarios", Imports: []string{module + "harness"}},
			{ImportPath: module + "newpart", Imports: nil},
		}
		Expect(backArrows(pkgs)).To(ConsistOf(
			"core imports scenarios: core may not import scenarios",
			"sim imports scripted: sim may not import scripted",
			"scenarios imports harness: scenarios may not import harness",
			ContainSubstring("newpart belongs to no part of the table"),
		))
	})

	It("core links nothing test-only, and only core/openai imports the OpenAI client", func() {
		for _, p := range listModule() {
			rel := strings.TrimPrefix(p.ImportPath, module)
			if rel == "core" || strings.HasPrefix(rel, "core/") {
				for _, d := range p.Deps {
					Expect(d).NotTo(SatisfyAny(
						HavePrefix("github.com/onsi/"), HavePrefix("github.com/sebdah/goldie"),
						HavePrefix(module+"internal/fixture"), HavePrefix(module+"internal/budget")),
						"%s links %s, which only tests may", rel, d)
				}
			}
			if rel != "core/openai" {
				Expect(p.Imports).NotTo(ContainElement(HavePrefix("github.com/sashabaranov/go-openai")), "%s imports go-openai; only core/openai may", rel)
			}
		}
	})

	It("docs/architecture.md draws exactly the table's arrows", func() {
		Expect(sorted(drawn())).To(Equal(sorted(allowed)))
	})
})
