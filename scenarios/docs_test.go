package scenarios_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"

	"github.com/crux-sim/crux-sim/harness"
	"github.com/crux-sim/crux-sim/scenarios"
)

const docPath = "../docs/scenarios.md"

// docSection is one "### name" section of docs/scenarios.md: its text and
// its YAML blocks.
type docSection struct {
	text   string
	blocks []string
}

var fence = regexp.MustCompile("(?s)```yaml\n(.*?)```")

func readDoc(t *testing.T) (string, map[string]docSection) {
	t.Helper()
	src, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(src)
	sections := map[string]docSection{}
	for _, part := range strings.Split(doc, "\n### ")[1:] {
		name, body, _ := strings.Cut(part, "\n")
		body, _, _ = strings.Cut(body, "\n## ") // a section ends at the next heading of either level
		var blocks []string
		for _, m := range fence.FindAllStringSubmatch(body, -1) {
			blocks = append(blocks, m[1])
		}
		sections[strings.TrimSpace(name)] = docSection{text: body, blocks: blocks}
	}
	return doc, sections
}

// TestTheFileFormatReferenceDocumentsEveryKeyTheLoaderAccepts holds
// docs/scenarios.md to the loader: every key of every section of the file
// format (scenarios.FileKeys, the lists the loader reads with) is named in
// that section of the page as `key` and shows up in an example there (or
// in the section of its own), and the page has no section the loader
// does not know.
func TestTheFileFormatReferenceDocumentsEveryKeyTheLoaderAccepts(t *testing.T) {
	_, sections := readDoc(t)
	known := map[string]bool{}
	for _, set := range scenarios.FileKeys() {
		known[set.Section] = true
		sec, ok := sections[set.Section]
		if !ok {
			t.Errorf("docs/scenarios.md has no \"### %s\" section for the keys %s", set.Section, strings.Join(set.Keys, ", "))
			continue
		}
		for _, key := range set.Keys {
			if !strings.Contains(sec.text, "`"+key+"`") {
				t.Errorf("section %q of docs/scenarios.md does not document the key `%s`", set.Section, key)
			}
			word := regexp.MustCompile(`(^|[^a-z-])` + regexp.QuoteMeta(key) + `([^a-z-]|$)`)
			examples := sec.blocks
			if own, ok := sections[key]; ok {
				examples = append(slices.Clone(examples), own.blocks...)
			}
			if !slices.ContainsFunc(examples, word.MatchString) {
				t.Errorf("section %q of docs/scenarios.md has no example using %s", set.Section, key)
			}
		}
	}
	for name := range sections {
		if !known[name] {
			t.Errorf("docs/scenarios.md has a section %q that is not a section of the file format", name)
		}
	}
}

// TestEveryYAMLExampleInTheReferenceLoads loads every ```yaml block of
// docs/scenarios.md: the complete scenario and the complete platform
// scenario as they are and passing, and each other block merged into one of
// them (into the platform scenario when it has a platform key; mappings
// merged key by key, lists appended), so that every example is a valid
// piece of a scenario.
func TestEveryYAMLExampleInTheReferenceLoads(t *testing.T) {
	doc, _ := readDoc(t)
	blocks := fence.FindAllStringSubmatch(doc, -1)
	if len(blocks) < 20 {
		t.Fatalf("docs/scenarios.md has %d YAML examples; expected one per section", len(blocks))
	}
	base, platformBase := blocks[0][1], ""
	for _, m := range blocks {
		if isComplete(m[1]) && hasTopKey(m[1], "platform") {
			platformBase = m[1]
			break
		}
	}
	if platformBase == "" {
		t.Fatal("docs/scenarios.md has no complete platform scenario")
	}
	for what, src := range map[string]string{"complete scenario": base, "complete platform scenario": platformBase} {
		sc, err := scenarios.Load("docs/scenarios.md ("+what+")", []byte(src))
		if err != nil {
			t.Fatalf("the %s does not load:\n%v", what, err)
		}
		o := harness.Run(sc, harness.Options{Seed: 1})
		if !o.Passed() {
			var b bytes.Buffer
			_ = harness.WriteReport(&b, o)
			t.Errorf("the %s does not pass:\n%s", what, b.String())
		}
	}
	for i, m := range blocks[1:] {
		if m[1] == platformBase {
			continue
		}
		into := base
		if hasTopKey(m[1], "platform") {
			into = platformBase
		}
		merged, err := mergeYAML(into, m[1])
		if err != nil {
			t.Errorf("example %d does not parse: %v\n%s", i+2, err, m[1])
			continue
		}
		if _, err := scenarios.Load(fmt.Sprintf("docs/scenarios.md example %d", i+2), merged); err != nil {
			t.Errorf("example %d does not load into the complete scenario:\n%s\n%v", i+2, m[1], err)
		}
	}
}

// hasTopKey reports whether a YAML document is a mapping with the key.
func hasTopKey(src, key string) bool {
	var m yaml.MapSlice
	if yaml.UnmarshalWithOptions([]byte(src), &m, yaml.UseOrderedMap()) != nil {
		return false
	}
	return slices.ContainsFunc(m, func(it yaml.MapItem) bool { return it.Key == key })
}

// isComplete reports whether a YAML block is a whole scenario, not a piece.
func isComplete(src string) bool { return hasTopKey(src, "name") && hasTopKey(src, "agents") }

// mergeYAML merges a fragment into a base document.
func mergeYAML(base, fragment string) ([]byte, error) {
	var b, f yaml.MapSlice
	if err := yaml.UnmarshalWithOptions([]byte(base), &b, yaml.UseOrderedMap()); err != nil {
		return nil, err
	}
	if err := yaml.UnmarshalWithOptions([]byte(fragment), &f, yaml.UseOrderedMap()); err != nil {
		return nil, err
	}
	return yaml.Marshal(merge(b, f))
}

func merge(base, over any) any {
	switch o := over.(type) {
	case yaml.MapSlice:
		b, ok := base.(yaml.MapSlice)
		if !ok {
			return o
		}
		out := slices.Clone(b)
		for _, item := range o {
			i := slices.IndexFunc(out, func(x yaml.MapItem) bool { return x.Key == item.Key })
			if i < 0 {
				out = append(out, item)
			} else {
				out[i].Value = merge(out[i].Value, item.Value)
			}
		}
		return out
	case []any:
		// Lists of mappings (turns, faults, expectations) grow; lists
		// of values (a schema's required, a tool list) are replaced.
		b, ok := base.([]any)
		if ok && len(o) > 0 && len(b) > 0 && isMap(o[0]) && isMap(b[0]) {
			return append(slices.Clone(b), o...)
		}
	}
	return over
}

func isMap(v any) bool {
	_, ok := v.(yaml.MapSlice)
	return ok
}

var updateDoc = flag.Lookup("update") // goldie's -update flag

// TestTheDocumentedFailureIsWhatCruxSimPrints runs the built-in research
// coordinator with its two work result calls taken out of the script and
// checks that docs/scenarios.md quotes the first two failures verbatim.
// With -update it rewrites the quote.
func TestTheDocumentedFailureIsWhatCruxSimPrints(t *testing.T) {
	var out bytes.Buffer
	if err := harness.WriteReport(&out, harness.Run(brokenYAML(t, "research-coordinator", withoutResultCalls), harness.Options{Seed: 1})); err != nil {
		t.Fatal(err)
	}
	report := out.String()
	start := strings.Index(report, "FAIL the recipe's five steps")
	end := strings.Index(report, "FAIL work of research ends completed")
	if start < 0 || end < start {
		t.Fatalf("the broken run does not fail as documented:\n%s", report)
	}
	quote := "```text\n" + report[start:end] + "```\n"
	src, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	const begin, stop = "<!-- failure-example:begin -->\n", "<!-- failure-example:end -->"
	doc := string(src)
	i, j := strings.Index(doc, begin), strings.Index(doc, stop)
	if i < 0 || j < i {
		t.Fatal("docs/scenarios.md has no failure-example markers")
	}
	if doc[i+len(begin):j] == quote {
		return
	}
	if updateDoc != nil && updateDoc.Value.String() == "true" {
		doc = doc[:i+len(begin)] + quote + doc[j:]
		if err := os.WriteFile(docPath, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("docs/scenarios.md quotes a failure that crux-sim no longer prints; run with -update. It prints:\n%s", quote)
}
