package scenarios

import (
	"fmt"
	"slices"
	"strings"

	"github.com/crux-sim/crux-sim/core/trace"
)

// Expectation is one checkable claim about a run. Scenario files, Go
// scenarios and Gomega matchers all build Expectations, so a claim is
// checked the same way wherever it is written.
type Expectation interface {
	// Check returns nil when the claim holds, or a failure that points at
	// the part of the trace that contradicts it.
	Check(r *Result) *Failure
	// Describe says what is claimed, in one line.
	Describe() string
}

// Failure explains why an expectation did not hold.
type Failure struct {
	// Message says what was missing or wrong.
	Message string
	// At is the index of the trace entry the failure is about, or -1.
	At int
}

// Report renders the failure with the transcript around it.
func (f *Failure) Report(t *trace.Trace) string {
	// The message names what a file or a model chose; the window is
	// transcript lines, escaped already.
	if f.At < 0 || t == nil {
		return trace.Escape(f.Message)
	}
	return trace.Escape(f.Message) + "\n" + Window(t, f.At, 4)
}

// Window renders the entries around index at, marking it.
func Window(t *trace.Trace, at, radius int) string {
	if len(t.Entries) == 0 {
		return "    (the trace is empty)"
	}
	at = min(max(at, 0), len(t.Entries)-1)
	lo, hi := max(0, at-radius), min(len(t.Entries), at+radius+1)
	var b strings.Builder
	if lo > 0 {
		fmt.Fprintf(&b, "    … %d earlier entries\n", lo)
	}
	for i := lo; i < hi; i++ {
		if t.Entries[i].Kind == trace.ToolCall && i != at {
			continue // the text rendering shows calls in their response
		}
		mark := "    "
		if i == at {
			mark = "  > "
		}
		for j, line := range strings.Split(t.EntryLine(i), "\n") {
			if j == 0 {
				fmt.Fprintf(&b, "%s#%-3d %s\n", mark, i+1, line)
			} else {
				fmt.Fprintf(&b, "         %s\n", line)
			}
		}
	}
	if hi < len(t.Entries) {
		fmt.Fprintf(&b, "    … %d later entries\n", len(t.Entries)-hi)
	}
	return strings.TrimRight(b.String(), "\n")
}

func fail(at int, format string, args ...any) *Failure {
	return &Failure{Message: fmt.Sprintf(format, args...), At: at}
}

// Named gives an expectation a name to report it by.
type Named struct {
	Name string
	Expectation
}

// Describe implements Expectation.
func (n Named) Describe() string { return n.Name }

// If checks an expectation only in runs where some entry matches When,
// such as a retry's context only in runs where a crash made a task retry;
// in other runs it holds. It keeps a fuzzed scenario's expectations true of
// every fault mix.
type If struct {
	When Pattern
	Then Expectation
}

// Check implements Expectation.
func (x If) Check(r *Result) *Failure {
	if firstMatch(r, &x.When, 0) < 0 {
		return nil
	}
	return x.Then.Check(r)
}

// Describe implements Expectation.
func (x If) Describe() string { return "if " + x.When.String() + ": " + x.Then.Describe() }

// InOrder claims the patterns match entries in this order; other entries
// may come between them.
type InOrder []Pattern

// Check implements Expectation.
func (o InOrder) Check(r *Result) *Failure {
	t := r.Trace
	pos, last := 0, -1
	for i := range o {
		c := r.compile(&o[i])
		found := r.nextMatch(&c, pos)
		if found < 0 {
			if anywhere := firstMatch(r, &o[i], 0); anywhere >= 0 {
				return fail(anywhere, "pattern %d of %d, %s, matches entry #%d, but only before entry #%d, which matched pattern %d; the sequence is out of order", i+1, len(o), &o[i], anywhere+1, last+1, i)
			}
			at, near := nearMiss(t, &o[i], pos)
			if i == 0 {
				return fail(at, "pattern 1 of %d, %s, matches no entry; %s", len(o), &o[i], near)
			}
			if at < 0 {
				at = last
			}
			return fail(at, "pattern %d of %d, %s, has no match after entry #%d, which matched pattern %d; %s", i+1, len(o), &o[i], last+1, i, near)
		}
		last, pos = found, found+1
	}
	return nil
}

// Describe implements Expectation.
func (o InOrder) Describe() string { return "in order: " + listPatterns(o) }

// InAnyOrder claims each pattern matches a distinct entry, in any order.
type InAnyOrder []Pattern

// Check implements Expectation. It holds when some assignment gives
// every pattern an entry of its own: the entries each pattern matches are
// found first, then patterns take entries in turn, and a pattern that
// finds its entries taken moves an earlier one to another of its entries
// where it can (an augmenting path), so a general pattern listed before a
// narrow one never takes the one entry the narrow one needs.
func (u InAnyOrder) Check(r *Result) *Failure {
	t := r.Trace
	cands := make([][]int, len(u))
	for i := range u {
		c := r.compile(&u[i])
		if at, m, all := r.among(&c); all {
			for j := range t.Entries {
				if c.match(t, &t.Entries[j]) {
					cands[i] = append(cands[i], j)
				}
			}
		} else {
			for _, j := range at {
				if m.matchFields(t, &t.Entries[j]) {
					cands[i] = append(cands[i], int(j))
				}
			}
		}
		if len(cands[i]) == 0 {
			at, near := nearMiss(t, &u[i], 0)
			return fail(at, "pattern %d of %d, %s, matches no entry; %s", i+1, len(u), &u[i], near)
		}
	}
	owner := map[int]int{} // entry -> the pattern it is assigned to
	var seen map[int]bool
	var assign func(i int) bool
	assign = func(i int) bool {
		for _, j := range cands[i] {
			if seen[j] {
				continue
			}
			seen[j] = true
			if k, taken := owner[j]; !taken || assign(k) {
				owner[j] = i
				return true
			}
		}
		return false
	}
	for i := range u {
		// A pattern that cannot be given an entry now cannot be later
		// either: no complete assignment exists.
		if seen = map[int]bool{}; !assign(i) {
			taken := cands[i][0]
			return fail(taken, "pattern %d of %d, %s, matches only entries that other patterns already matched, such as #%d; each pattern needs an entry of its own", i+1, len(u), &u[i], taken+1)
		}
	}
	return nil
}

// Describe implements Expectation.
func (u InAnyOrder) Describe() string { return "all of, in any order: " + listPatterns(u) }

// Subset claims that every entry matching Of matches one of Allowed: nothing
// else of that shape happened.
type Subset struct {
	Of      Pattern
	Allowed []Pattern
}

// Check implements Expectation.
func (s Subset) Check(r *Result) *Failure {
	t := r.Trace
	of := s.Of.compile()
	for j := range t.Entries {
		e := &t.Entries[j]
		if !of.match(t, e) {
			continue
		}
		if !slices.ContainsFunc(s.Allowed, func(p Pattern) bool { return p.Match(t, e) }) {
			return fail(j, "entry #%d matches %s but none of the allowed patterns %s", j+1, &s.Of, listPatterns(s.Allowed))
		}
	}
	return nil
}

// Describe implements Expectation.
func (s Subset) Describe() string {
	return fmt.Sprintf("every %s is one of: %s", &s.Of, listPatterns(s.Allowed))
}

// Never claims no entry matches any of the patterns. With After, only
// entries after the first match of After count.
type Never struct {
	Patterns []Pattern
	After    *Pattern
}

// Check implements Expectation.
func (n Never) Check(r *Result) *Failure {
	from := 0
	if n.After != nil {
		from = firstMatch(r, n.After, 0)
		if from < 0 {
			return nil
		}
		from++
	}
	var room [4]compiled // a never claim names a pattern or a few
	never := room[:0]
	for i := range n.Patterns {
		never = append(never, r.compile(&n.Patterns[i]))
	}
	// The first entry any pattern matches, and the first pattern that
	// matches it.
	first, which := -1, 0
	for i := range never {
		if j := r.nextMatch(&never[i], from); j >= 0 && (first < 0 || j < first) {
			first, which = j, i
		}
	}
	if first >= 0 {
		return fail(first, "entry #%d matches %s, which must never happen", first+1, &n.Patterns[which])
	}
	return nil
}

// Describe implements Expectation.
func (n Never) Describe() string {
	s := "never: " + listPatterns(n.Patterns)
	if n.After != nil {
		s += " after " + n.After.String()
	}
	return s
}

// Count claims the number of entries matching a pattern is within
// [Min, Max]; Max < 0 means no upper bound.
type Count struct {
	Pattern  Pattern
	Min, Max int
}

// Check implements Expectation.
func (c Count) Check(r *Result) *Failure {
	n, last := 0, -1
	p := c.Pattern.compile()
	t := r.Trace
	if at, m, all := r.among(&p); all {
		for j := range t.Entries {
			if p.match(t, &t.Entries[j]) {
				n++
				last = j
			}
		}
	} else {
		for _, j := range at {
			if m.matchFields(t, &t.Entries[j]) {
				n++
				last = int(j)
			}
		}
	}
	if n < c.Min || (c.Max >= 0 && n > c.Max) {
		return fail(last, "%d entries match %s; want %s", n, &c.Pattern, c.bounds())
	}
	return nil
}

func (c Count) bounds() string { return bounds(c.Min, c.Max) }

// bounds says a count's range (max -1: no upper bound).
func bounds(lo, hi int) string {
	switch {
	case hi < 0:
		return fmt.Sprintf("at least %d", lo)
	case lo == hi:
		return fmt.Sprintf("exactly %d", lo)
	default:
		return fmt.Sprintf("between %d and %d", lo, hi)
	}
}

// Describe implements Expectation.
func (c Count) Describe() string { return fmt.Sprintf("%s of %s", c.bounds(), &c.Pattern) }

// nearMiss finds the entry from index from on that comes nearest to
// matching the pattern (the fewest differing fields, among entries of the
// pattern's kind when there are any) and says how it differs.
func nearMiss(t *trace.Trace, p *Pattern, from int) (int, string) {
	best, bestWhy, bestD := -1, []string(nil), 0
	sameKind := p.Kind != "" && slices.ContainsFunc(t.Entries[min(from, len(t.Entries)):], func(e trace.Entry) bool { return e.Kind == p.Kind })
	for j := from; j < len(t.Entries); j++ {
		e := &t.Entries[j]
		if sameKind && e.Kind != p.Kind {
			continue
		}
		why, d := p.distance(t, e)
		if best < 0 || d < bestD {
			best, bestWhy, bestD = j, why, d
		}
	}
	switch {
	case best < 0 && from > 0:
		return -1, "no entry comes after it"
	case best < 0:
		return -1, "the trace is empty"
	case !sameKind && p.Kind != "":
		return -1, fmt.Sprintf("there is no %s entry%s at all", p.Kind, after(from))
	}
	return best, fmt.Sprintf("the nearest%s is entry #%d, where %s", after(from), best+1, strings.Join(bestWhy, ", and "))
}

func after(from int) string {
	if from == 0 {
		return ""
	}
	return fmt.Sprintf(" after entry #%d", from)
}

func firstMatch(r *Result, p *Pattern, from int) int {
	c := r.compile(p)
	return r.nextMatch(&c, from)
}

func listPatterns(ps []Pattern) string {
	parts := make([]string, len(ps))
	for i := range ps {
		parts[i] = "[" + ps[i].String() + "]"
	}
	return strings.Join(parts, ", ")
}
