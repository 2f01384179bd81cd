package scenarios

import (
	"time"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/internal/keys"
	"github.com/crux-sim/crux-sim/scripted"
)

// Scenario is a story about agents: who they are, what the model does at
// each of their steps, what goes wrong, and what must be true of the run.
// It describes a run; the harness performs it.
type Scenario struct {
	Name        string
	Description string
	// Source is where the scenario came from (a file, or builtin:NAME).
	Source string
	// Digest is the SHA-256 of the YAML a scenario was loaded from, in
	// hex (empty for a scenario built in Go): a schedule file records it,
	// and replays only on the very same source.
	Digest string
	Tags   []string

	Run          TopLevel
	Scripts      []Script
	Faults       []Fault
	Expectations []Expectation
	Options      Options
	// Platform, when set, makes the scenario a run of the platform's
	// background jobs (sessions, tasks, loops on virtual time) instead of
	// Run's top-level agents.
	Platform *Platform

	// loaded is set for a scenario the file loader made: it checked
	// everything Check does.
	loaded bool
	// claims are the loader's descriptions of Expectations (see Claim),
	// claimsOf the first of the expectations they describe.
	claims   []string
	claimsOf *Expectation
	// patterns are the loader's expectations' patterns, compiled when
	// they were described (see Judge).
	patterns compiledPatterns
	// prepared is a provider of the loader's scripts with their calls'
	// arguments encoded (scripted.Provider.Compile), made once, when the
	// scenario loads; preparedFrom is what Scripts held then (see
	// Provider).
	prepared     *scripted.Provider
	preparedFrom []scriptShape
	// agents are the loader's top-level agent trees prepared once, when
	// the scenario loads (core.Prepare), for every run's runtime to share
	// (see PreparedAgents); nil when they do not prepare.
	agents *core.Prepared
}

// scriptShape is what a Script held when its scenario's provider was
// prepared: its agent and run, and its turns' slice.
type scriptShape struct {
	agent string
	run   int
	turns *scripted.Turn
	n     int
}

func shapeOf(sc *Script) scriptShape {
	sh := scriptShape{agent: sc.Agent, run: sc.Run, n: len(sc.Turns)}
	if len(sc.Turns) > 0 {
		sh.turns = &sc.Turns[0]
	}
	return sh
}

// TopLevel names the top-level agents, which start at once on one context.
type TopLevel struct {
	ID string
	// Agents are the top-level agents by name.
	Agents map[string]*core.Agent
	// Context is every top-level agent's input.
	Context any
	Model   string
}

// Script is what the model does for one agent: for all its runs (Run 0)
// or only for its Run-th run.
type Script struct {
	Agent string
	Run   int
	Turns []scripted.Turn
}

// DefaultResolution is the precision virtual times are shown at unless a
// scenario says otherwise: a drawn latency of 2.239289444s shows as +2.239s.
const DefaultResolution = time.Millisecond

// ShownAt is the resolution the scenario's times are shown at.
func (o Options) ShownAt() time.Duration {
	if o.Resolution > 0 {
		return o.Resolution
	}
	return DefaultResolution
}

// Options tune the runtime for a scenario.
type Options struct {
	MaxConcurrent  int
	MaxOutstanding int
	MaxSteps       int
	// Settle lets background Work finish after the top-level runs end,
	// instead of cancelling it when the runtime closes.
	Settle bool
	// Resolution is the precision the run's virtual times are shown at in
	// transcripts and reports (DefaultResolution when 0).
	Resolution time.Duration
}

// FaultKind names a fault.
type FaultKind string

// Faults the harness can inject.
const (
	// FaultProviderError fails a provider step of an agent.
	FaultProviderError FaultKind = "provider-error"
	// FaultLatency adds virtual latency to a provider step of an agent.
	FaultLatency FaultKind = "latency"
	// FaultAction issues a work action (cancel, send, detach, status,
	// result) on the owner's behalf at an arbitrary point.
	FaultAction FaultKind = "action"
	// FaultCrash drops all process-local state at an arbitrary point.
	FaultCrash FaultKind = "crash"
)

// Fault is something the harness makes go wrong.
type Fault struct {
	Kind FaultKind
	// Agent and Step select a provider step (Step 0: every step); Run
	// selects the agent's Run-th run (0: every run).
	Agent string
	Step  int
	Run   int
	// Message is the provider error text, or the guidance of a send.
	Message string
	// Latency is added latency; with LatencyMax above it, a latency
	// drawn from [Latency, LatencyMax] by the seed's latency stream.
	Latency    time.Duration
	LatencyMax time.Duration
	// Action and Work say which work action to issue, on which Work.
	Action string
	Work   Ref
	// After is when an action or crash becomes due: after the first entry
	// matching it (nil: as soon as the Work exists, or at the start).
	After *Pattern
	// Jitter lets the scheduler run up to this many more steps, drawn by
	// the seed's fault stream, before the fault fires.
	Jitter int
	// Delay is virtual time a crash waits once due (before its jitter);
	// with DelayMax above it, a delay drawn from [Delay, DelayMax] by the
	// seed's fault stream, so that a campaign crashes at points across a
	// long run.
	Delay    time.Duration
	DelayMax time.Duration
	// Probability fires the fault with this probability, drawn by the
	// seed's fault stream (0 means always).
	Probability float64
}

// New starts a Go scenario.
func New(name string) *Scenario {
	return &Scenario{Name: name, Source: "go:" + name, Run: TopLevel{ID: name, Agents: map[string]*core.Agent{}}}
}

// Describe sets the one-line description.
func (s *Scenario) Describe(text string) *Scenario { s.Description = text; return s }

// Agent adds a top-level agent under a name.
func (s *Scenario) Agent(name string, a *core.Agent) *Scenario {
	if s.Run.Agents == nil {
		s.Run.Agents = map[string]*core.Agent{}
	}
	s.Run.Agents[name] = a
	return s
}

// Context sets the top-level agents' input.
func (s *Scenario) Context(v any) *Scenario { s.Run.Context = v; return s }

// Script adds turns to an agent's script, shared by all its runs.
func (s *Scenario) Script(agent string, turns ...scripted.Turn) *Scenario {
	s.Scripts = append(s.Scripts, Script{Agent: agent, Turns: turns})
	return s
}

// ScriptRun adds turns for the n-th run (from 1) of an agent.
func (s *Scenario) ScriptRun(agent string, n int, turns ...scripted.Turn) *Scenario {
	s.Scripts = append(s.Scripts, Script{Agent: agent, Run: n, Turns: turns})
	return s
}

// Inject adds faults.
func (s *Scenario) Inject(faults ...Fault) *Scenario {
	s.Faults = append(s.Faults, faults...)
	return s
}

// Expect adds expectations.
func (s *Scenario) Expect(e ...Expectation) *Scenario {
	s.Expectations = append(s.Expectations, e...)
	return s
}

// ExpectsPrepareFailure reports whether the scenario is about preparation
// failing: one of its expectations is a PrepareFails (named or not). A
// scenario whose preparation fails without one fails.
func (s *Scenario) ExpectsPrepareFailure() bool {
	for _, e := range s.Expectations {
		switch unnamed(e).(type) {
		case PrepareFails, *PrepareFails:
			return true
		}
	}
	return false
}

// Claim is what the i-th expectation claims: its Describe, the
// description of its verdict. A scenario the file loader made describes
// its expectations once, when it loads them, so that the runs of a
// campaign do not build the same lines seed after seed; a scenario built
// in Go, whose expectations may change between runs, describes them when
// asked. Expectations given to a loaded scenario afterwards (a new slice,
// or more of them) are described when asked too; one replaced in place,
// in the slice the loader made, keeps the loaded description, as a loaded
// scenario keeps the loader's checks (Check).
func (s *Scenario) Claim(i int) string {
	if s.described() {
		return s.claims[i]
	}
	return s.Expectations[i].Describe()
}

// described reports whether the expectations are the slice the loader
// described (describe), of the same length.

func (s *Scenario) described() bool {
	return len(s.claims) == len(s.Expectations) && len(s.claims) > 0 && s.claimsOf == &s.Expectations[0]
}

// Judge checks the i-th expectation against a run's result:
// Expectations[i].Check(r). A scenario the file loader made compiles its
// expectations' patterns once, when it loads, so that the runs of a
// campaign do not pick out the same patterns' fields seed after seed; Judge
// hands r those, and Check reads them for the patterns they were compiled
// from. Expectations given to a loaded scenario afterwards (a new slice,
// more of them, one replaced in the loader's slice) compile their patterns
// when checked, as a Go scenario's always do; a pattern changed in place,
// in the slices the loader made, keeps the fields it set when it loaded,
// as a loaded scenario keeps the loader's checks (Check) and claims
// (Claim).
func (s *Scenario) Judge(i int, r *Result) *Failure {
	r.patterns = nil
	if s.described() {
		r.patterns = s.patterns
	}
	return s.Expectations[i].Check(r)
}

// describe records what the scenario's expectations claim, as they are
// now (Claim).
func (s *Scenario) describe() {
	s.claims, s.claimsOf, s.patterns = nil, nil, nil
	if len(s.Expectations) == 0 {
		return
	}
	s.claims = make([]string, len(s.Expectations))
	for i, e := range s.Expectations {
		s.claims[i] = e.Describe()
	}
	s.claimsOf = &s.Expectations[0]
	s.patterns = compilePatterns(s.Expectations)
}

// With sets runtime options.
func (s *Scenario) With(o Options) *Scenario { s.Options = o; return s }

// Provider builds a fresh scripted provider holding the scenario's scripts.
// A scenario the file loader made prepares its scripts once, when it
// loads, with their calls' arguments encoded (scripted.Provider.Compile),
// and each provider is a fork of that one (scripted.Provider.Fork), which
// answers every step as a provider scripted anew would: the runs of a
// campaign do not copy and encode the same scripts seed after seed.
// Scripts given to a loaded scenario afterwards (a new slice, more or fewer
// of them, a script's turns replaced, cut or added to) are built into a
// provider when asked, as a Go scenario's always are; a turn changed in
// place, in the slices the loader made, keeps the loaded form, as a loaded
// scenario keeps the loader's checks (Check) and claims (Claim).
func (s *Scenario) Provider(opts scripted.Options) *scripted.Provider {
	if s.prepared != nil && s.asPrepared() {
		return s.prepared.Fork(opts)
	}
	return s.provider(opts)
}

// ProviderIn is Provider in the memory of old, a provider one of its
// runs, or another scenario's, was done with (nil: none): a fork of the
// prepared scripts is made in old (scripted.Provider.Refork), which must
// no longer be in use, nor anything it handed out; a scenario without
// prepared scripts builds a new provider, as Provider does.
func (s *Scenario) ProviderIn(old *scripted.Provider, opts scripted.Options) *scripted.Provider {
	if old != nil && s.prepared != nil && s.asPrepared() {
		return old.Refork(s.prepared, opts)
	}
	return s.Provider(opts)
}

// prepare makes the provider that Provider forks while the scripts are
// what they are now, and the agents' preparation (PreparedAgents).
func (s *Scenario) prepare() {
	s.prepared = s.provider(scripted.Options{}).Compile()
	s.preparedFrom = make([]scriptShape, len(s.Scripts))
	for i := range s.Scripts {
		s.preparedFrom[i] = shapeOf(&s.Scripts[i])
	}
	names := keys.Sorted(s.Run.Agents)
	agents := make([]*core.Agent, len(names))
	for i, name := range names {
		agents[i] = s.Run.Agents[name]
	}
	s.agents, _ = core.Prepare(agents...) // nil on error: each run reports it
}

// PreparedAgents returns the top-level agent trees of a scenario the file
// loader made, prepared once when it loaded (core.Prepare), for a runtime
// to run (core.Options.Prepared): the runs of a campaign do not resolve
// the same tools and compile the same schemas seed after seed. It is nil
// for a scenario built in Go and for one whose agents do not prepare
// (each run's runtime then prepares them and reports why). A runtime
// finds an agent in the set by its pointer, so an agent put in Run.Agents
// after loading, or in place of one, is prepared by the run as a Go
// scenario's is; an agent changed in place keeps the form it was
// prepared in, as a turn changed in place does (see Provider): an agent
// is not to be modified once prepared (core.Agent).
func (s *Scenario) PreparedAgents() *core.Prepared { return s.agents }

// asPrepared reports whether the scripts are what they were when the
// provider was prepared.
func (s *Scenario) asPrepared() bool {
	if len(s.Scripts) != len(s.preparedFrom) {
		return false
	}
	for i := range s.Scripts {
		if shapeOf(&s.Scripts[i]) != s.preparedFrom[i] {
			return false
		}
	}
	return true
}

// provider builds a provider of the scripts as they are.
func (s *Scenario) provider(opts scripted.Options) *scripted.Provider {
	p := scripted.New(opts)
	turns := 0
	for _, sc := range s.Scripts {
		turns += len(sc.Turns)
	}
	p.Reserve(len(s.Scripts), turns)
	for _, sc := range s.Scripts {
		if sc.Run > 0 {
			p.ScriptRun(sc.Agent, sc.Run, sc.Turns...)
		} else {
			p.Script(sc.Agent, sc.Turns...)
		}
	}
	return p
}
