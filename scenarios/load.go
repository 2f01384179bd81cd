package scenarios

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/core/lifecycle"
	"github.com/crux-sim/crux-sim/internal/inputfile"
)

// ErrLoad is wrapped by every scenario-file error.
var ErrLoad = errors.New("bad scenario file")

// MaxFileSize is the largest scenario file LoadFile and Load read, in
// bytes; crux-sim's --max-file-size sets it. A scenario is a few kilobytes:
// the limit is there so that a file from elsewhere cannot make the loader
// spend without bound.
var MaxFileSize int64 = 4 << 20

// fileLimit is how LoadFile reads: only a regular file, at most
// MaxFileSize bytes.
func fileLimit() inputfile.Limit {
	return inputfile.Limit{Bytes: MaxFileSize, What: "a scenario file", Raise: "--max-file-size (scenarios.MaxFileSize in Go)"}
}

// LoadFile reads a scenario file. Only a regular file is read, and at most
// MaxFileSize bytes of it: a device such as /dev/zero, a FIFO or a
// directory is refused before anything is read.
func LoadFile(path string) (*Scenario, error) {
	sc, _, err := LoadFileSource(path)
	return sc, err
}

// LoadFileSource is LoadFile that also returns the bytes it read, for a
// caller that keeps the source the scenario came from (a recording embeds
// it) without reading the file a second time.
func LoadFileSource(path string) (*Scenario, []byte, error) {
	src, err := inputfile.Read(path, fileLimit())
	if err != nil {
		return nil, nil, fmt.Errorf("%w %s: %w", ErrLoad, path, err)
	}
	sc, err := Load(path, src)
	if err != nil {
		return nil, nil, err
	}
	return sc, src, nil
}

// LoadReader reads a scenario from r (standard input, say), at most
// MaxFileSize bytes of it; name is what errors call it, such as "<stdin>".
func LoadReader(name string, r io.Reader) (*Scenario, error) {
	src, err := inputfile.ReadFrom(r, fileLimit())
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrLoad, name, err)
	}
	return Load(name, src)
}

// Load reads a scenario from YAML. name is the file name used in errors.
// Every problem is reported as a *LoadError, at its line and column.
func Load(name string, src []byte) (*Scenario, error) {
	if int64(len(src)) > MaxFileSize {
		return nil, &LoadError{File: name, Problems: []Problem{{Line: 1, Col: 1, Message: (&inputfile.TooLargeError{Limit: fileLimit()}).Error()}}}
	}
	return load(name, src)
}

// load reads a scenario from YAML of any size: the built-ins, which ship in
// the binary, are not held to the limit on files a user hands in.
func load(name string, src []byte) (*Scenario, error) {
	root, err := parseYAML(src)
	if err != nil {
		var pe *posError
		if errors.As(err, &pe) {
			return nil, &LoadError{File: name, Problems: []Problem{{Line: pe.line, Col: pe.col, Message: pe.msg}}}
		}
		return nil, &LoadError{File: name, Problems: []Problem{{Line: 1, Col: 1, Message: err.Error()}}}
	}
	l := &loader{decoder: decoder{file: name}, agents: map[string]*agentDecl{}}
	sc := l.scenario(root)
	if err := l.err(); err != nil {
		return nil, err
	}
	sc.Source, sc.loaded = name, true
	sc.describe()
	sc.prepare()
	sum := sha256.Sum256(src)
	sc.Digest = hex.EncodeToString(sum[:])
	return sc, nil
}

// Is lets errors.Is(err, ErrLoad) hold for every *LoadError.
func (e *LoadError) Is(target error) bool { return target == ErrLoad }

type loader struct {
	decoder
	agents map[string]*agentDecl
	order  []string
	// runNames maps the run's names for its top-level agents to their ids,
	// to catch a run name used where an agent id belongs.
	runNames map[string]string
	// expectsPrepareFailure: the file has a prepare-fails expectation, so
	// agents that preparation rejects are what it is about, not mistakes.
	expectsPrepareFailure bool
	// platform: the file describes a platform run, so its agents may call
	// the platform's tools.
	platform bool
}

func (l *loader) scenario(root *node) *Scenario {
	sc := &Scenario{}
	if root.kind != mapNode {
		l.errorf(root, "a scenario file is a mapping with the keys name, agents and run (and optionally description, tags, options, script, faults, expect); found %s", root.describe())
		return sc
	}
	f := l.fields(root, "the scenario", scenarioKeys...)
	l.platform = f["platform"] != nil
	if en := f["expect"]; en != nil && en.kind == seqNode {
		for _, it := range en.items {
			if k, _ := it.entry("prepare-fails"); k != nil {
				l.expectsPrepareFailure = true
			}
		}
	}
	if f["name"] == nil {
		l.errorf(root, "missing key \"name\": every scenario has a name, such as name: research-coordinator")
	}
	sc.Name = l.str(f["name"], "name")
	sc.Description = l.str(f["description"], "description")
	sc.Tags = l.strs(f["tags"], "tags")
	if f["agents"] == nil {
		l.errorf(root, "missing key \"agents\": a scenario declares its agents, such as agents: {research-agent: {prompt: ...}}")
	}
	switch {
	case f["run"] == nil && f["platform"] == nil:
		l.errorf(root, "missing key \"run\": a scenario says which agents run, such as run: {agents: {coordinator: research-coordinator}} (or, for the platform's background jobs, which sessions start: platform: {sessions: [{agent: coordinator, send: [go]}]})")
	case f["run"] != nil && f["platform"] != nil:
		k, _ := root.entry("platform")
		l.errorf(k, "a scenario has run (top-level agents) or platform (sessions on the platform), not both")
	}
	if f["agents"] == nil || !l.declareAgents(f["agents"]) {
		// Every other section names agents; without them, each name
		// would be one more problem that is really this one.
		return sc
	}
	if f["run"] != nil {
		sc.Run = l.run(f["run"])
	}
	if f["platform"] != nil {
		sc.Platform = l.platformSection(f["platform"])
		sc.Run.ID = "platform"
	}
	sc.Options = l.options(f["options"])
	sc.Scripts = l.scripts(f["script"])
	sc.Faults = l.faults(f["faults"])
	sc.Expectations = l.expectations(f["expect"])
	return sc
}

func (l *loader) run(n *node) TopLevel {
	f := l.fields(n, "run", runKeys...)
	r := TopLevel{ID: l.str(f["id"], "run id"), Model: l.str(f["model"], "run model"), Agents: map[string]*core.Agent{}}
	an := f["agents"]
	switch {
	case an == nil:
		l.errorf(n, "run is missing key \"agents\": the top-level agents by name, such as {coordinator: research-coordinator}")
	case an.kind != mapNode:
		l.errorf(an, "run agents must be a mapping from name to agent id, found %s", an.describe())
	case len(an.keys) == 0:
		l.errorf(an, "run agents is empty: name at least one top-level agent, such as {coordinator: research-coordinator}")
	default:
		for i, k := range an.keys {
			id := l.str(an.vals[i], "run agent")
			a, ok := l.agents[id]
			if !ok {
				if id != "" {
					l.errorf(an.vals[i], "run agent %q names agent %q, which is not declared%s", scalarString(k), id, suggest(id, l.order))
				}
				continue
			}
			r.Agents[scalarString(k)] = a.agent
			if l.runNames == nil {
				l.runNames = map[string]string{}
			}
			l.runNames[scalarString(k)] = id
		}
	}
	cn := f["context"]
	if cn != nil {
		r.Context = cn.toAny()
	}
	l.checkContext(n, cn, an, r)
	if r.ID == "" {
		r.ID = "run"
	}
	return r
}

// checkContext refuses a run whose context no run could start from: each
// top-level agent gets the context as its input, so a context its input
// schema rejects, or one its prompt's template cannot render, fails every
// run the same way, and is bad input (as a script that does not fit is),
// not a run that passes for want of an expectation that saw it.
func (l *loader) checkContext(run, cn, an *node, r TopLevel) {
	if an == nil || an.kind != mapNode {
		return
	}
	at := cn
	if at == nil {
		at = run
	}
	for _, k := range an.keys {
		name := scalarString(k)
		a := r.Agents[name]
		if a == nil {
			continue
		}
		if in := a.Prompt.Input; in != nil {
			if err := in.Validate(r.Context); err != nil {
				if cn == nil {
					l.errorf(at, "run has no context, but run agent %q (agent %q) takes an input its schema checks: %v", name, a.ID, err)
				} else {
					l.errorf(at, "run context is not a valid input of run agent %q (agent %q): %v", name, a.ID, err)
				}
				continue
			}
		}
		if a.Prompt.Render != nil {
			if _, err := a.Prompt.Render(r.Context); err != nil {
				l.errorf(at, "run context does not render the prompt of run agent %q (agent %q): %v", name, a.ID, err)
			}
		}
	}
}

func (l *loader) options(n *node) Options {
	f := l.fields(n, "options", optionKeys...)
	return Options{
		MaxConcurrent:  l.integer(f["max-concurrent"], "options max-concurrent", 1),
		MaxOutstanding: l.integer(f["max-outstanding"], "options max-outstanding", 1),
		MaxSteps:       l.budget(f["max-steps"], "options max-steps"),
		Settle:         l.boolean(f["settle"], "options settle"),
		Resolution:     l.duration(f["resolution"], "options resolution"),
	}
}

func (l *loader) agentRef(n *node, what string) string {
	id := l.str(n, what)
	if id != "" {
		if _, ok := l.agents[id]; !ok {
			if real, isRunName := l.runNames[id]; isRunName {
				l.errorf(n, "%s %q is the run's name for agent %q; patterns, faults and outcomes name agents by id, so write %q", what, id, real, real)
			} else {
				l.errorf(n, "%s %q is not a declared agent%s", what, id, suggest(id, l.order))
			}
		}
	}
	return id
}

// ref reads a symbolic Work reference ("tool", "tool#2", "agent/tool") and
// checks that it can resolve: the tool is backgroundable on some agent.
func (l *loader) ref(n *node, what string) Ref {
	if n == nil {
		return Ref{}
	}
	s := l.str(n, what)
	if s == "" {
		return Ref{}
	}
	r, err := ParseRef(s)
	if err != nil {
		l.errorf(n, "%s: %v", what, err)
		return Ref{}
	}
	var candidates []string
	for _, id := range l.order {
		if r.Agent == "" || r.Agent == id {
			candidates = append(candidates, l.agents[id].backgroundTools()...)
		}
	}
	if p := refProblem(s, r, l.order, candidates, l.toolKindOf(r.Tool)); p != "" {
		l.errorf(n, "%s%s", what, p)
	}
	return r
}

func uniq(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}

func stateNames() []string {
	out := make([]string, len(lifecycle.States))
	for i, s := range lifecycle.States {
		out[i] = string(s)
	}
	return out
}
