package scenarios

// The expect section: what must be true of the run.

import (
	"fmt"
)

func (l *loader) expectations(n *node) []Expectation {
	var out []Expectation
	for i, it := range l.seq(n, "expect") {
		what := fmt.Sprintf("expectation %d", i+1)
		name := ""
		if k, v := it.entry("name"); k != nil && it.kind == mapNode {
			name = l.str(v, what+" name")
			it = withoutKey(it, "name")
		}
		var cond *Pattern
		if k, v := it.entry("if"); k != nil && it.kind == mapNode {
			p := l.pattern(v, what+" if", "")
			cond = &p
			it = withoutKey(it, "if")
		}
		kind, v, ok := l.oneOf(it, what, "expectation", expectationKinds...)
		if !ok {
			continue
		}
		e := l.expectation(kind, v, what+" ("+kind+")")
		if e == nil {
			continue
		}
		if cond != nil {
			e = If{When: *cond, Then: e}
		}
		if name != "" {
			e = Named{Name: name, Expectation: e}
		}
		out = append(out, e)
	}
	return out
}

func (l *loader) expectation(kind string, v *node, what string) Expectation {
	switch kind {
	case "ordered":
		return InOrder(l.patterns(v, what))
	case "unordered":
		return InAnyOrder(l.patterns(v, what))
	case "subset":
		f := l.fields(v, what, subsetKeys...)
		if f["of"] == nil {
			l.errorf(v, "%s is missing key \"of\": the pattern of the entries it is about, such as of: {work-call: {agent: AGENT}}", what)
		}
		if f["allowed"] == nil {
			l.errorf(v, "%s is missing key \"allowed\": the patterns every entry it is about must match", what)
		}
		if f["of"] == nil || f["allowed"] == nil {
			return nil
		}
		return Subset{Of: l.pattern(f["of"], what+" of", ""), Allowed: l.patterns(f["allowed"], what+" allowed")}
	case "never":
		if v.kind == seqNode {
			return Never{Patterns: l.patterns(v, what)}
		}
		f := l.fields(v, what, neverKeys...)
		nv := Never{Patterns: l.patterns(f["patterns"], what+" patterns")}
		if f["after"] != nil {
			p := l.pattern(f["after"], what+" after", "")
			nv.After = &p
		}
		return nv
	case "count":
		f := l.fields(v, what, countKeys...)
		c := Count{Pattern: l.pattern(f["match"], what+" match", ""), Min: l.integer(f["min"], what+" min", 0), Max: -1}
		if f["match"] == nil {
			l.errorf(v, "%s is missing key \"match\": the pattern to count, such as match: {request: {agent: AGENT}}", what)
		}
		if f["max"] != nil {
			c.Max = l.integer(f["max"], what+" max", 0)
			if c.Max < c.Min {
				l.errorf(f["max"], "%s: max %d is below min %d, so no run can satisfy it", what, c.Max, c.Min)
			}
		}
		return c
	case "output-only-via-result":
		if v.kind == scalarNode {
			return OutputOnlyViaResult{Tool: l.bgTool(v, what)}
		}
		f := l.fields(v, what, outputOnlyKeys...)
		return OutputOnlyViaResult{Tool: l.bgTool(f["tool"], what+" tool"), AllowUnread: l.boolean(f["allow-unread"], what+" allow-unread")}
	case "foreground-output":
		return ForegroundOutput{Tool: l.childTool(v, what)}
	case "work-ends":
		f := l.fields(v, what, workEndsKeys...)
		w := WorkEnds{Work: l.ref(f["work"], what+" work"), States: l.strs(f["in"], what+" in")}
		if f["work"] == nil || f["in"] == nil {
			l.errorf(v, "%s needs work and in, such as {work: research, in: [completed]}", what)
		}
		for j, s := range w.States {
			if p := notAWorkState(s); p != "" {
				l.errorf(f["in"].items[j], "%s: %s", what, p)
			}
		}
		return w
	case "outcome":
		f := l.fields(v, what, outcomeKeys...)
		if f["agent"] == nil {
			l.errorf(v, "%s is missing key \"agent\": the top-level agent whose run it is about", what)
		}
		return AgentEnds{Agent: l.agentRef(f["agent"], what+" agent"), Contains: l.str(f["contains"], what+" contains"),
			Equals: l.str(f["equals"], what+" equals"), Failed: l.optBool(f["failed"], what+" failed")}
	case "prepare-fails":
		f := l.fields(v, what, prepareFailsKeys...)
		return PrepareFails{Contains: l.str(f["contains"], what+" contains")}
	case "tasks-end", "parents-first", "finding", "training":
		if !l.platform {
			l.errorf(v, "%s is about durable tasks and findings of the platform; it belongs in a scenario with a platform section", what)
		}
		return l.platformExpectation(kind, v, what)
	}
	return nil
}

func withoutKey(n *node, key string) *node {
	c := *n
	c.keys, c.vals = nil, nil
	for i, k := range n.keys {
		if scalarString(k) != key {
			c.keys = append(c.keys, k)
			c.vals = append(c.vals, n.vals[i])
		}
	}
	return &c
}
