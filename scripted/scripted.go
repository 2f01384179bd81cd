package scripted

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/internal/fewmap"
	"github.com/crux-sim/crux-sim/internal/slab"
)

// Turn is what the model does at one provider step: call tools, say text,
// give a final output, or fail.
type Turn struct {
	// Calls, when present, make this step a tool round.
	Calls []Call
	// Text is the assistant text (the final output of a text agent).
	Text string
	// Output is a structured final output; it is marshalled to JSON
	// unless it is already a json.RawMessage or a string of JSON.
	Output any
	// Err makes the provider step fail with this error.
	Err error
	// Latency is how long the step takes, on the provider's clock.
	Latency time.Duration
	// When, if set, makes the turn match only requests for which it
	// returns true (see Provider for how turns are chosen).
	When func(*core.Request) bool
	// Condition, if set, does what When does and can say why a request
	// fails it: a script with unused turns but none matching names, for
	// each of them, its condition and which part of the request failed it.
	// A scenario's when: condition is one.
	Condition Condition
	// Respond, if set, computes the response from the request instead of
	// the fields above.
	Respond func(*core.Request) (*core.Response, error)
	// Label names the turn in error messages.
	Label string
	// Repeat makes the turn answer every request it matches, any number
	// of times, instead of once: for an agent that runs again and again
	// (the runs of a loop, the attempts of a retried task). A script with
	// a repeating turn still never cycles; order the turns meant for one
	// use before it.
	Repeat bool
}

// Condition is a turn's describable condition on the request.
type Condition interface {
	// Match reports whether the turn may answer the request.
	Match(req *core.Request) bool
	// String says what the condition asks, such as "step=2 message=\"go\"".
	String() string
	// Explain says which parts of the request fail the condition.
	Explain(req *core.Request) []string
}

// matches reports whether the turn's conditions let it answer req.
func (t *Turn) matches(req *core.Request) bool {
	return (t.When == nil || t.When(req)) && (t.Condition == nil || t.Condition.Match(req))
}

// Call is one scripted tool call.
type Call struct {
	// ID is the tool-call id; empty gets call-N, numbered per provider.
	ID   string
	Name string
	// Args is the arguments: a string is sent verbatim (so malformed JSON
	// can be scripted), anything else is marshalled.
	Args any
}

// Final is a turn that ends the run with a structured output.
func Final(output any) Turn { return Turn{Output: output} }

// Say is a turn that ends a text agent's run with text.
func Say(text string) Turn { return Turn{Text: text} }

// Calls is a turn that calls tools.
func Calls(calls ...Call) Turn { return Turn{Calls: calls} }

// Fail is a turn whose provider step fails.
func Fail(err error) Turn { return Turn{Err: err} }

// Use is a tool call.
func Use(name string, args any) Call { return Call{Name: name, Args: args} }

// Func answers a request; it is the function form of a script.
type Func func(req *core.Request) (*core.Response, error)

// ErrScript is wrapped by every script failure: a script that ran dry, a
// turn that matched nothing, a turn that could not be encoded.
var ErrScript = errors.New("script")

// Options configure a Provider.
type Options struct {
	// Sleep waits a turn's latency. Default: core.Sleep, which waits on the
	// clock of the runtime making the request (virtual in a simulation); a
	// cancelled context ends the wait.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Provider plays the model for every agent of a tree from per-agent
// scripts. It never cycles: a script that runs dry fails the step loudly,
// naming the agent and the step, and records the failure in Failures so
// that a failure inside a background child (which the parent only sees as
// state "failed") is not lost.
//
// Turn selection for an agent: the first unused turn of its script whose
// When matches the request (a turn without When matches any request). Scripts
// are shared by every run of the agent, in the order their requests arrive;
// Reserve makes room at once for the given number of scripts and turns
// that Script and ScriptRun are about to be given, so that a provider
// built from a list of scripts allocates for the list rather than for each
// script. The turns are still copied: a caller may change its own
// afterwards.
func (p *Provider) Reserve(scripts, turns int) *Provider {
	p.mu.Lock()
	defer p.mu.Unlock()
	if scripts > 0 {
		p.room.scripts = make([]script, scripts)
	}
	if turns > 0 {
		p.room.turns = make([]Turn, turns)
	}
	return p
}

// ScriptRun gives the n-th run of an agent a script of its own.
type Provider struct {
	opts Options

	mu sync.Mutex
	// scripts holds the scripts by agent (agent#n for a run's own), and
	// under an agent's key the runs of it seen so far, with or without a
	// script of its own: one list of keys, where two were.
	scripts  fewmap.Map[keyed]
	funcs    map[string]Func
	requests []*core.Request
	failures []error
	runs     fewmap.Map[*runState] // by run id
	// runRoom and callRoom are where the next runs' states and responses
	// are made, a few at a time: four runs' (after runs0) and two
	// responses at first, then twice as many as the last time, up to
	// sixty-four (newRooms; a fork sizes its first responses' room).
	runRoom  slab.Slab[runState]
	callRoom slab.Slab[oneCall]
	callSeq  int
	// runs0 are the first runs' states of a provider that is not
	// reforked, made with it: a run of the scripts has a few runs, and a
	// provider is made for each. nruns0 (beside runScripts) counts those
	// handed out.
	runs0 [2]runState
	// scripts0 holds the scripts' cursors of a fork of two scripts or
	// fewer that is not reforked (forkInto), made with it.
	scripts0 [2]script
	// requests0 is requests' first backing: a run makes a few requests.
	requests0 [8]*core.Request
	// room is what Reserve set aside for the scripts to come.
	room struct {
		scripts []script
		turns   []Turn
	}
	// runScripts is set once a script is keyed agent#n (ScriptRun): until
	// then a request looks only for its agent's shared script.
	runScripts bool
	nruns0     uint8
	// userCode counts the turns and answers that hand a request to a
	// function of the caller's (When, Respond, Answer's Func); it is read
	// before every request (ReadsRequestsOnly) without the lock.
	userCode atomic.Int64
	// kept is what a provider reforked (Refork) keeps for its next fork;
	// nil for any other.
	kept *kept
}

// kept is the memory of a reforked provider's bookkeeping: the scripts'
// cursors, and every run state and response it made, handed out again
// in order after the next Refork.
type kept struct {
	scripts []script
	runs    made[runState]
	ones    made[oneCall]
	multis  made[core.Response]
}

// made lists the values of a kind a reforked provider made, in order,
// so that after the next Refork it hands them out again before it makes
// more. The methods of a nil kept's lists do nothing.
type made[T any] struct {
	list []*T
	next int // list[:next] are in use since the Refork
}

// take returns the next value made before, not zeroed; nil when every
// one is in use.
func (m *made[T]) take() *T {
	if m == nil || m.next == len(m.list) {
		return nil
	}
	m.next++
	return m.list[m.next-1]
}

// keep lists a value made since the Refork, in use.
func (m *made[T]) keep(v *T) {
	if m != nil {
		m.list = append(m.list, v)
		m.next++
	}
}

// reuse hands the values out again from the first.
func (m *made[T]) reuse() { m.next = 0 }

// The lists of a kept, nil for none.
func (k *kept) runStates() *made[runState] {
	if k == nil {
		return nil
	}
	return &k.runs
}

func (k *kept) oneCalls() *made[oneCall] {
	if k == nil {
		return nil
	}
	return &k.ones
}

func (k *kept) responses() *made[core.Response] {
	if k == nil {
		return nil
	}
	return &k.multis
}

// ReadsRequestsOnly reports whether the provider, as scripted so far, only
// reads the requests it is handed (core.RequestReader): true while no turn
// has a When or Respond function and no agent has an Answer function, which
// are the caller's code and could write to a request. A Condition (what a
// scenario's when: builds) reads the request and must not write to it.
func (p *Provider) ReadsRequestsOnly() bool {
	return p.userCode.Load() == 0
}

// keyed is what a provider holds under a key of its scripts: the script
// (nil while there is none) and, under an agent's key, how many of the
// agent's runs the provider has seen.
type keyed struct {
	s    *script
	runs int
}

// runState is what the provider knows of one run: its ordinal among its
// agent's runs, what its step's references resolve against, and the
// work.refs its history showed, indexed once the history is long enough
// for an index to pay (see history.workRef; most runs' never is, and they
// make no index). Only the run's own step reads or changes history and
// refs, and a run takes one step at a time.
type runState struct {
	ordinal int
	history history
	refs    *runRefs
}

// run returns the request's run, counted among its agent's runs when it
// is new. The caller holds p.mu.
func (p *Provider) run(req *core.Request) *runState {
	run, _ := p.runs.Get(req.Run)
	if run == nil {
		run = p.newRun()
		e, _ := p.scripts.Get(req.Agent)
		e.runs++
		run.ordinal = e.runs
		p.scripts.Set(req.Agent, e)
		p.runs.Set(req.Run, run)
	}
	return run
}

// newRun is a zero run state: one a reforked provider made before, or
// one from the run room. The caller holds p.mu.
func (p *Provider) newRun() *runState {
	if run := p.kept.runStates().take(); run != nil {
		*run = runState{}
		return run
	}
	if p.kept == nil && int(p.nruns0) < len(p.runs0) {
		// Not for a reforked provider: its states are listed in kept, to
		// be handed out again after the next Refork, which zeroes these.
		p.nruns0++
		return &p.runs0[p.nruns0-1]
	}
	run := p.runRoom.New()
	p.kept.runStates().keep(run)
	return run
}

// newRooms starts the rooms of the runs' states and the responses: a run
// has a few of each, a loop's week a few hundred.
func (p *Provider) newRooms() {
	p.runRoom, p.callRoom = slab.Sized[runState](4, 64), slab.Sized[oneCall](2, 64)
}

// newCall is a zero response from the call room.
func (p *Provider) newCall() *oneCall {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.callRoom.New()
}

// history returns what the run's references resolve against in req (the
// run pick found for it: only the run's own step reads it, without the
// provider's lock).
func (run *runState) historyOf(req *core.Request) *history {
	run.history = history{req: req, run: run}
	return &run.history
}

// script is an agent's turns and which of them requests took. The turns
// are only read and appended to, never written in place, so that forks
// (see Fork) share them: each appends to a copy of its own.
type script struct {
	turns []Turn
	// used has a bit per turn, set once a request took it; used0 is its
	// first backing, for sixty-four turns.
	used  []uint64
	used0 [1]uint64
	// from is the script's cursor: every turn before it is used and does
	// not repeat, so no request can take it, and a pick starts there
	// instead of at the first turn.
	from int
	// args are the turns' calls' arguments as Compile encoded them, a
	// list per turn (shorter than turns when turns were added after it),
	// shared with forks like the turns.
	args [][]encodedArgs
}

func (s *script) isUsed(i int) bool { return s.used[i/64]&(1<<(i%64)) != 0 }

// take marks turn i used and moves the cursor past the turns that no
// request can take any more.
func (s *script) take(i int) {
	s.used[i/64] |= 1 << (i % 64)
	for s.from < len(s.turns) && s.isUsed(s.from) && !s.turns[s.from].Repeat {
		s.from++
	}
}

// fit makes room in used for a bit per turn.
func (s *script) fit() {
	if s.used == nil {
		s.used = s.used0[:]
	}
	for len(s.used)*64 < len(s.turns) {
		s.used = append(s.used, 0)
	}
}

// New returns a Provider with no scripts.
func New(opts ...Options) *Provider {
	p := &Provider{}
	p.requests = p.requests0[:0]
	p.newRooms()
	if len(opts) > 0 {
		p.opts = opts[0]
	}
	return p
}

// Script appends turns to an agent's shared script.
func (p *Provider) Script(agent string, turns ...Turn) *Provider {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, _ := p.scripts.Get(agent)
	s := e.s
	if s == nil {
		if len(p.room.scripts) > 0 {
			s, p.room.scripts = &p.room.scripts[0], p.room.scripts[1:]
		} else {
			s = &script{}
		}
		e.s = s
		p.scripts.Set(agent, e)
		p.runScripts = p.runScripts || strings.Contains(agent, "#")
	}
	if s.turns == nil && len(turns) <= cap(p.room.turns) {
		// A new script's turns are copied into the reserved room, capped
		// at their length, so that a later append copies them out.
		n := copy(p.room.turns[:len(turns)], turns)
		s.turns, p.room.turns = p.room.turns[:n:n], p.room.turns[n:]
	} else {
		s.turns = append(s.turns, turns...)
	}
	s.fit()
	for _, t := range turns {
		if t.When != nil || t.Respond != nil {
			p.userCode.Add(1)
		}
	}
	return p
}

// Fork returns a provider with p's scripts and Answer functions and none
// of its history: no turn taken, no request, run, call id or failure seen.
// The scripts' turns are shared, not copied (a provider only ever appends
// to a script, and a fork's first append copies), so scripts prepared once
// answer any number of runs, one fork each, at the cost of a fork's
// bookkeeping. Turns given to a provider must not be changed afterwards,
// by it or any fork.
func (p *Provider) Fork(opts ...Options) *Provider {
	p.mu.Lock()
	defer p.mu.Unlock()
	q := New(opts...)
	p.forkInto(q, nil)
	return q
}

// Refork makes p a fork of from, what from.Fork(opts...) returns, in the
// memory p has (p must not be from): the cursors of its scripts, and the
// run states and responses it made, are reused for the new fork's,
// from the next Refork on. Every response p handed out must no longer be in
// use: a caller reforks a provider only once the run it answered was
// dropped, as a campaign's job does with the runs that passed.
func (p *Provider) Refork(from *Provider, opts ...Options) *Provider {
	k := p.kept
	if k == nil {
		k = &kept{}
	} else {
		k.runs.reuse()
		k.ones.reuse()
		k.multis.reuse()
	}
	requests := p.requests
	if cap(requests) <= len(p.requests0) {
		requests = nil
	}
	*p = Provider{kept: k}
	p.requests = p.requests0[:0]
	p.newRooms()
	if requests != nil {
		clear(requests)
		p.requests = requests[:0]
	}
	if len(opts) > 0 {
		p.opts = opts[0]
	}
	from.mu.Lock()
	defer from.mu.Unlock()
	from.forkInto(p, k)
	return p
}

// forkInto makes q, new, a fork of p, its scripts in k's (when it has
// room for them). The caller holds p.mu.
func (p *Provider) forkInto(q *Provider, k *kept) {
	n := 0
	for _, e := range p.scripts.All {
		if e.s != nil {
			n++
		}
	}
	var scripts []script
	switch {
	case k != nil && cap(k.scripts) >= n:
		scripts = k.scripts[:n]
		clear(scripts)
	case k == nil && n <= len(q.scripts0):
		scripts = q.scripts0[:n]
	default:
		scripts = make([]script, n)
		if k != nil {
			k.scripts = scripts
		}
	}
	i, turns := 0, 0
	for key, e := range p.scripts.All {
		s := e.s
		if s == nil {
			continue // an agent whose runs p counted, without a script
		}
		c := &scripts[i]
		i++
		c.turns = s.turns[:len(s.turns):len(s.turns)]
		c.args = s.args[:len(s.args):len(s.args)]
		c.fit()
		q.scripts.Set(key, keyed{s: c})
		turns += len(s.turns)
	}
	// A run of the scripts answers about as many requests as they have
	// turns (more when some repeat): room for that many responses first.
	q.callRoom = slab.Sized[oneCall](min(max(turns, 2), 64), 64)
	q.runScripts = p.runScripts
	if p.funcs != nil {
		q.funcs = maps.Clone(p.funcs)
	}
	q.userCode.Store(p.userCode.Load())
}

// Compile encodes the arguments of every call the scripts hold so far,
// once, for the provider and the forks made of it afterwards (see Fork) to
// share: a step then writes a call's arguments from that encoding,
// resolving only its references (WorkOf, ResultField) against the request,
// and a call without references costs nothing to encode. What a step
// writes is the same, byte for byte, error for error; arguments that only
// encoding/json can write (or that resolve to such a value) are encoded at
// the step, as without Compile. Like Fork, it takes the turns as they are:
// turns must not be changed afterwards. Turns added later are encoded at
// each step.
func (p *Provider) Compile() *Provider {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, e := range p.scripts.All {
		s := e.s
		if s == nil {
			continue
		}
		args := make([][]encodedArgs, len(s.turns))
		for i := range s.turns {
			var calls []encodedArgs
			for j, c := range s.turns[i].Calls {
				switch c.Args.(type) {
				case string, nil: // written as they are at a step
					continue
				}
				if calls == nil {
					calls = make([]encodedArgs, len(s.turns[i].Calls))
				}
				calls[j] = compileArgs(c.Args)
			}
			args[i] = calls
		}
		s.args = args
	}
	return p
}

// ScriptRun gives the n-th run (from 1) of an agent its own script, used
// before the agent's shared one.
func (p *Provider) ScriptRun(agent string, n int, turns ...Turn) *Provider {
	return p.Script(agent+"#"+strconv.Itoa(n), turns...)
}

// Answer makes f answer every request of the agent that its script does not.
func (p *Provider) Answer(agent string, f Func) *Provider {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.funcs == nil {
		p.funcs = map[string]Func{}
	}
	p.funcs[agent] = f
	p.userCode.Add(1)
	return p
}

// Requests returns every request received, in order.
func (p *Provider) Requests() []*core.Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*core.Request(nil), p.requests...)
}

// RequestsFor returns the requests of one agent, in order.
func (p *Provider) RequestsFor(agent string) []*core.Request {
	var out []*core.Request
	for _, r := range p.Requests() {
		if r.Agent == agent {
			out = append(out, r)
		}
	}
	return out
}

// Failures returns every script failure so far.
func (p *Provider) Failures() []error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]error(nil), p.failures...)
}

// Unused describes turns no request consumed, by agent, for reports.
func (p *Provider) Unused() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]int{}
	for key, e := range p.scripts.All {
		s := e.s
		if s == nil {
			continue
		}
		for i := range s.turns {
			if !s.isUsed(i) {
				out[key]++
			}
		}
	}
	return out
}

// Step answers one request.
func (p *Provider) Step(ctx context.Context, req *core.Request) (*core.Response, error) {
	c, err := p.pick(req)
	if err != nil {
		return nil, err
	}
	if c.answer != nil {
		return c.answer(req)
	}
	turn := c.turn
	if turn.Latency > 0 {
		if err := p.sleep(ctx, turn.Latency); err != nil {
			return nil, err
		}
	}
	if turn.Respond != nil {
		return turn.Respond(req)
	}
	if turn.Err != nil {
		return nil, turn.Err
	}
	return p.encode(req, c)
}

// choice is what answers a request (pick): a turn of a script, with its
// calls' arguments as Compile encoded them (nil when it did not), and the
// request's run; or an Answer function.
type choice struct {
	turn   *Turn
	args   []encodedArgs
	run    *runState
	answer Func
}

// pick chooses the turn (or the Answer function) that answers req. The
// turn is the script's own: the caller only reads it.
func (p *Provider) pick(req *core.Request) (choice, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.requests = append(p.requests, req)
	run := p.run(req)
	n := run.ordinal
	// The run's own script first, when there can be one, then the agent's.
	keys := [2]string{1: req.Agent}
	from := 1
	if p.runScripts {
		keys[0], from = req.Agent+"#"+strconv.Itoa(n), 0
	}
	for _, key := range keys[from:] {
		e, _ := p.scripts.Get(key)
		s := e.s
		if s == nil {
			continue
		}
		for i := s.from; i < len(s.turns); i++ {
			t := &s.turns[i]
			if (s.isUsed(i) && !t.Repeat) || !t.matches(req) {
				continue
			}
			s.take(i)
			c := choice{turn: t, run: run}
			if i < len(s.args) {
				c.args = s.args[i]
			}
			return c, nil
		}
	}
	if f := p.funcs[req.Agent]; f != nil {
		return choice{answer: f}, nil
	}
	err := p.dryError(req, n)
	p.failures = append(p.failures, err)
	return choice{}, err
}

func (p *Provider) dryError(req *core.Request, n int) error {
	var total, left int
	var why []string
	for _, key := range []string{req.Agent + "#" + strconv.Itoa(n), req.Agent} {
		if e, _ := p.scripts.Get(key); e.s != nil {
			s := e.s
			total += len(s.turns)
			for i := range s.turns {
				t, used := &s.turns[i], s.isUsed(i)
				if !used {
					left++
				}
				if !used || t.Repeat {
					why = append(why, t.whyNot(req, key, i))
				}
			}
		}
	}
	what := "ran dry"
	if left > 0 {
		what = fmt.Sprintf("has %d unused turn(s) but none matches the request", left)
	}
	if total == 0 {
		what = "has no script"
	}
	err := fmt.Errorf("%w: agent %q %s at step %d of run %d (%s); the script had %d turn(s)",
		ErrScript, req.Agent, what, req.Step, n, req.Run, total)
	if len(why) > 0 {
		err = fmt.Errorf("%w: %s", err, strings.Join(why, "; "))
	}
	return err
}

// whyNot says why an unused turn does not answer req: its condition and the
// part of the request that fails it.
func (t *Turn) whyNot(req *core.Request, key string, i int) string {
	name := t.Label
	if name == "" {
		name = fmt.Sprintf("turn %d of %q", i+1, key)
	}
	switch {
	case t.Condition != nil && !t.Condition.Match(req):
		return fmt.Sprintf("%s (when %s) fails it: %s", name, t.Condition, strings.Join(t.Condition.Explain(req), ", and "))
	case t.When != nil:
		return fmt.Sprintf("%s has a When function that refuses it", name)
	}
	return name + " matches it" // not reached: such a turn would have answered
}

// oneCall is a response of one tool call, allocated with its call.
type oneCall struct {
	core.Response
	call [1]core.ToolCall
}

func (p *Provider) encode(req *core.Request, c choice) (*core.Response, error) {
	t, encoded := c.turn, c.args
	var resp *core.Response
	if len(t.Calls) == 1 {
		r := p.kept.oneCalls().take()
		if r == nil {
			r = p.newCall()
			p.kept.oneCalls().keep(r)
		} else {
			*r = oneCall{}
		}
		resp = &r.Response
		resp.ToolCalls = r.call[:0]
	} else if resp = p.kept.responses().take(); resp != nil {
		clear(resp.ToolCalls)
		*resp = core.Response{ToolCalls: resp.ToolCalls[:0]}
	} else {
		resp = &p.newCall().Response // its call left unused
		p.kept.responses().keep(resp)
	}
	resp.Text = t.Text
	if t.Output != nil {
		raw, err := encodeJSON(t.Output)
		if err != nil {
			return nil, p.fail(fmt.Errorf("%w: agent %q step %d: output: %v", ErrScript, req.Agent, req.Step, err))
		}
		resp.Output = raw
	}
	for i, call := range t.Calls {
		args := "{}"
		switch a := call.Args.(type) {
		case string:
			args = a
		case nil:
		default:
			if i < len(encoded) && encoded[i].compiled() && len(encoded[i].refs) == 0 {
				args = encoded[i].text[0]
				break
			}
			var scratch [512]byte // args is a copy of what is written here
			raw, ok, err := scratch[:0], false, error(nil)
			if i < len(encoded) && encoded[i].compiled() {
				raw, ok, err = encoded[i].appendTo(raw, c.run.historyOf(req))
			}
			if !ok && err == nil {
				raw, err = appendJSON(scratch[:0], c.run.historyOf(req), a)
			}
			if err != nil {
				return nil, p.fail(fmt.Errorf("%w: agent %q step %d: arguments of %s: %v", ErrScript, req.Agent, req.Step, call.Name, err))
			}
			args = string(raw)
		}
		id := call.ID
		if id == "" {
			id = p.nextCallID()
		}
		resp.ToolCalls = append(resp.ToolCalls, core.ToolCall{ID: id, Name: call.Name, Arguments: args})
	}
	return resp, nil
}

func (p *Provider) fail(err error) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failures = append(p.failures, err)
	return err
}

func (p *Provider) nextCallID() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.callSeq++
	if ids := callIDs(); p.callSeq < len(ids) {
		return ids[p.callSeq]
	}
	return "call-" + strconv.Itoa(p.callSeq)
}

// callIDs are the first generated call ids, made once for every provider
// (ids[n] is "call-n"): a run's scripted calls number a few dozen at most.
var callIDs = sync.OnceValue(func() []string {
	ids := make([]string, 256)
	for n := 1; n < len(ids); n++ {
		ids[n] = "call-" + strconv.Itoa(n)
	}
	return ids
})

func (p *Provider) sleep(ctx context.Context, d time.Duration) error {
	if p.opts.Sleep != nil {
		return p.opts.Sleep(ctx, d)
	}
	return core.Sleep(ctx, d)
}

func encodeJSON(v any) (json.RawMessage, error) {
	switch t := v.(type) {
	case json.RawMessage:
		return t, nil
	case string:
		if json.Valid([]byte(strings.TrimSpace(t))) {
			return json.RawMessage(t), nil
		}
		return json.Marshal(t)
	}
	// Outputs hold no references: resolving against no request finds none,
	// and a WorkOf in an output is encoded as json.Marshal would (a string).
	var scratch [1024]byte
	raw, err := appendJSON(scratch[:0], &noHistory, v)
	if err != nil {
		return nil, err
	}
	return slices.Clone(raw), nil
}
