package scenarios

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/core/trace"
	"github.com/crux-sim/crux-sim/internal/didyoumean"
)

// LoadError lists every problem found in a scenario file, each at its line
// and column.
type LoadError struct {
	File     string
	Problems []Problem
}

// Problem is one thing wrong with a scenario file.
type Problem struct {
	Line, Col int
	Message   string
}

// maxProblems bounds how many problems one file reports.
const maxProblems = 20

func (e *LoadError) Error() string {
	var b strings.Builder
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%s:%d:%d: %s", trace.EscapeControls(e.File), p.Line, p.Col, shown(p.Message))
	}
	return b.String()
}

// maxMessage bounds a problem's message as Error renders it, in bytes.
const maxMessage = 1024

// shown is a problem's message as it reaches a terminal: whatever of the
// file it quotes (a name, a key, a schema library's words about a pattern)
// with every character that is not printable text escaped, so that no
// file can paint the terminal or start a line of its own; and a message
// past maxMessage cut to its start and its end (which says what to do), so
// that a megabyte key is not a megabyte of error.
func shown(msg string) string {
	msg = trace.EscapeControls(msg)
	if len(msg) <= maxMessage {
		return msg
	}
	head, tail := msg[:maxMessage*2/3], msg[len(msg)-maxMessage/3:]
	for !utf8.ValidString(head) {
		head = head[:len(head)-1]
	}
	for !utf8.ValidString(tail) {
		tail = tail[1:]
	}
	return fmt.Sprintf("%s … (%d bytes not shown) … %s", head, len(msg)-len(head)-len(tail), tail)
}

// decoder reads nodes, collecting problems instead of stopping at the first,
// so that a user fixes a file in one pass.
type decoder struct {
	file     string
	problems []Problem
}

func (d *decoder) errorf(n *node, format string, args ...any) {
	line, col := 1, 1
	if n != nil {
		// A position is never below 1:1, whatever the parser reported.
		line, col = max(n.line, 1), max(n.col, 1)
	}
	d.problems = append(d.problems, Problem{Line: line, Col: col, Message: fmt.Sprintf(format, args...)})
}

func (d *decoder) err() error {
	if len(d.problems) == 0 {
		return nil
	}
	sort.SliceStable(d.problems, func(i, j int) bool {
		a, b := d.problems[i], d.problems[j]
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Col < b.Col
	})
	ps := d.problems
	if len(ps) > maxProblems {
		more := len(d.problems) - maxProblems
		msg := fmt.Sprintf("… and %d more problems from here on; fix these and load the file again", more)
		if more == 1 {
			msg = "… and 1 more problem from here on; fix these and load the file again"
		}
		ps = append(ps[:maxProblems:maxProblems], Problem{Line: ps[maxProblems].Line, Col: ps[maxProblems].Col, Message: msg})
	}
	return &LoadError{File: d.file, Problems: ps}
}

// fields reads a mapping whose keys must be among allowed. It reports
// unknown keys with a suggestion and returns the known ones.
func (d *decoder) fields(n *node, what string, allowed ...string) map[string]*node {
	out := map[string]*node{}
	if n == nil {
		return out
	}
	if n.kind == scalarNode && n.value == nil {
		return out // an empty mapping written as nothing
	}
	if n.kind != mapNode {
		d.errorf(n, "%s must be a mapping, found %s", what, n.describe())
		return out
	}
	for i, k := range n.keys {
		key := scalarString(k)
		if !slices.Contains(allowed, key) {
			d.errorf(k, "unknown key %q in %s%s", key, what, suggest(key, allowed))
			continue
		}
		out[key] = n.vals[i]
	}
	return out
}

// oneOf reads a single-key mapping whose key is among allowed (a tagged
// union, such as an expectation or a pattern); noun names the key's role in
// messages ("expectation", "pattern kind").
func (d *decoder) oneOf(n *node, what, noun string, allowed ...string) (string, *node, bool) {
	if n.kind != mapNode || len(n.keys) != 1 {
		switch {
		case n.kind == mapNode && len(n.keys) > 1:
			d.errorf(n.keys[1], "%s has two keys, %q and %q; it takes exactly one, its %s (one of %s)", what, scalarString(n.keys[0]), scalarString(n.keys[1]), noun, strings.Join(allowed, ", "))
		case n.kind == mapNode:
			d.errorf(n, "%s is an empty mapping; it takes one key, its %s (one of %s)", what, noun, strings.Join(allowed, ", "))
		default:
			d.errorf(n, "%s must be a mapping with one key, its %s (one of %s); found %s", what, noun, strings.Join(allowed, ", "), n.describe())
		}
		return "", nil, false
	}
	key := scalarString(n.keys[0])
	if !slices.Contains(allowed, key) {
		d.errorf(n.keys[0], "%s: unknown %s %q%s", what, noun, key, suggest(key, allowed))
		return "", nil, false
	}
	return key, n.vals[0], true
}

func (d *decoder) str(n *node, what string) string {
	if n == nil {
		return ""
	}
	s, ok := n.value.(string)
	if n.kind != scalarNode || !ok {
		d.errorf(n, "%s must be a string, found %s", what, n.describe())
		return ""
	}
	return s
}

func (d *decoder) integer(n *node, what string, minimum int) int {
	if n == nil {
		return 0
	}
	v, ok := n.value.(int64)
	if n.kind != scalarNode || !ok {
		d.errorf(n, "%s must be an integer, found %s", what, n.describe())
		return 0
	}
	if v < int64(minimum) {
		d.errorf(n, "%s must be at least %d, found %d", what, minimum, v)
		return 0
	}
	if v > 1<<30 {
		d.errorf(n, "%s is too large: at most %d, found %d", what, 1<<30, v)
		return 0
	}
	return int(v)
}

// maxBudget bounds a step or attempt budget (max-steps, max-iterations,
// max-attempts). The runtime's default is 24 steps and a built-in needs a
// dozen; a budget of a billion asks for a run without end, which the
// simulator would stop only after a million scheduling steps and
// gigabytes of trace.
const maxBudget = 10_000

// budget reads a step or attempt budget: an integer from 1 to maxBudget.
func (d *decoder) budget(n *node, what string) int {
	v := d.integer(n, what, 1)
	if v > maxBudget {
		d.errorf(n, "%s is %d, more than %d; no scenario needs that many (a run's default is %d steps), and a run that took them would cost without bound", what, v, maxBudget, core.DefaultMaxSteps)
		return 0
	}
	return v
}

func (d *decoder) probability(n *node, what string) float64 {
	if n == nil {
		return 0
	}
	var f float64
	switch v := n.value.(type) {
	case int64:
		f = float64(v)
	case float64:
		f = v
	default:
		d.errorf(n, "%s must be a number between 0 and 1, found %s", what, n.describe())
		return 0
	}
	if n.kind != scalarNode || f < 0 || f > 1 {
		d.errorf(n, "%s must be a number between 0 and 1, found %s", what, n.describe())
		return 0
	}
	return f
}

func (d *decoder) boolean(n *node, what string) bool {
	if n == nil {
		return false
	}
	v, ok := n.value.(bool)
	if n.kind != scalarNode || !ok {
		d.errorf(n, "%s must be true or false, found %s", what, n.describe())
	}
	return v
}

func (d *decoder) optBool(n *node, what string) *bool {
	if n == nil {
		return nil
	}
	v := d.boolean(n, what)
	return &v
}

func (d *decoder) duration(n *node, what string) time.Duration {
	if n == nil {
		return 0
	}
	s, ok := n.value.(string)
	if n.kind != scalarNode || !ok {
		d.errorf(n, "%s must be a duration such as \"5s\" or \"250ms\", found %s", what, n.describe())
		return 0
	}
	dur, err := core.ParseDuration(s)
	switch {
	case err != nil:
		d.errorf(n, "%s must be a duration such as \"5s\" or \"250ms\": %v", what, err)
		return 0
	case dur < 0 || dur > MaxDuration:
		d.errorf(n, "%s %q is longer than %s, the longest virtual time a scenario may name", what, s, "366d")
		return 0
	}
	return dur
}

// MaxDuration is the longest virtual time a scenario file may name: a
// year, far beyond the platform's longest rule (a dynamic loop expires
// after 7 days), and far enough from time.Duration's 292 years that sums
// of durations never overflow.
const MaxDuration = 366 * 24 * time.Hour

// MaxJitter is the most scheduling steps a fault's jitter may let run
// before it fires.
const MaxJitter = 10_000

func (d *decoder) jitter(n *node, what string) int {
	j := d.integer(n, what, 0)
	if j > MaxJitter {
		d.errorf(n, "%s is %d scheduling steps; a jitter is at most %d", what, j, MaxJitter)
		return 0
	}
	return j
}

// durationRange reads a range of durations, [lo, hi], either end
// optional; a maximum below the minimum is a problem at the maximum.
func (d *decoder) durationRange(loNode, hiNode *node, what, loKey, hiKey string) (lo, hi time.Duration) {
	before := len(d.problems)
	lo, hi = d.duration(loNode, what+" "+loKey), d.duration(hiNode, what+" "+hiKey)
	if loNode != nil && hiNode != nil && hi < lo && len(d.problems) == before {
		d.errorf(hiNode, "%s: %s %s is below %s %s; a range runs from its minimum up to its maximum", what, hiKey, hi, loKey, lo)
	}
	return lo, hi
}

func (d *decoder) strs(n *node, what string) []string {
	if n == nil {
		return nil
	}
	if n.kind != seqNode {
		d.errorf(n, "%s must be a list of strings, found %s", what, n.describe())
		return nil
	}
	out := make([]string, 0, len(n.items))
	for _, it := range n.items {
		out = append(out, d.str(it, what+" entries"))
	}
	return out
}

func (d *decoder) seq(n *node, what string) []*node {
	if n == nil {
		return nil
	}
	if n.kind == scalarNode && n.value == nil {
		return nil
	}
	if n.kind != seqNode {
		d.errorf(n, "%s must be a list, found %s", what, n.describe())
		return nil
	}
	return n.items
}

// suggest offers the closest allowed word to a misspelt one (see
// internal/didyoumean, which the CLI and the Go builder use too).
func suggest(got string, allowed []string) string { return didyoumean.Hint(got, allowed) }
