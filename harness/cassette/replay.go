package cassette

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/crux-sim/crux-sim/core"
)

// ErrDivergence is matched (errors.Is) by every *Divergence.
var ErrDivergence = errors.New("replay diverged from the cassette")

// DivergenceKind says how a replay left its cassette.
type DivergenceKind string

// Divergence kinds.
const (
	// Missing: the run made a request the cassette does not have.
	Missing DivergenceKind = "missing"
	// Extra: the cassette has exchanges the run never asked for; reported
	// by Replayer.Extra once the run is over.
	Extra DivergenceKind = "extra"
	// Mismatch: the run's request differs from the recorded one.
	Mismatch DivergenceKind = "mismatch"
)

// Divergence is where a replay left its cassette. A replayed step that
// diverges fails with it; errors.As finds it in the run's error.
type Divergence struct {
	Kind DivergenceKind
	// File and Line locate the recorded exchange: the mismatched one, the
	// first one never asked for, or (missing) the last one of that run;
	// Line is 0 when there is none.
	File string
	Line int
	// Agent, Ordinal and Step say which request: the run's for missing and
	// mismatch, the cassette's for extra.
	Agent   string
	Ordinal int
	Step    int
	// Field is the first differing field of a mismatch, such as
	// messages[4].content or status.rows[0].state, and Recorded and Live
	// its two sides, normalized as they were compared (ids renamed in order
	// of appearance, such as <w#1>, and timestamps as <time>).
	Field          string
	Recorded, Live string
	// Path, for a field compared as a JSON value (a tool result, tool-call
	// arguments, a schema), is where inside it the values first differ,
	// such as findings[0] or the key that one side lacks; empty when the
	// whole value differs.
	Path string
	// Reason explains a missing or extra divergence in words.
	Reason string
	// Remaining counts the exchanges of the run never asked for (extra).
	Remaining int
	// Exchange is the recorded exchange and Request the run's request,
	// where there is one.
	Exchange *Exchange
	Request  *core.Request
}

// Is makes every Divergence match ErrDivergence.
func (d *Divergence) Is(target error) bool { return target == ErrDivergence }

func (d *Divergence) Error() string {
	loc := nameOr(d.File)
	if d.Line > 0 {
		loc += ":" + strconv.Itoa(d.Line)
	}
	who := fmt.Sprintf("%s run %d step %d", d.Agent, d.Ordinal, d.Step)
	edited := ""
	if d.Exchange != nil && d.Exchange.Edited {
		edited = fmt.Sprintf("\n  (line %d was edited by hand: the request it rebuilds no longer matches its digest)", d.Exchange.Line)
	}
	switch d.Kind {
	case Mismatch:
		field := d.Field
		if d.Path != "" {
			field += " (as JSON, at " + d.Path + ")"
		}
		return fmt.Sprintf("%s: replay mismatch: %s differs from the cassette at %s\n  cassette: %s\n  run:      %s%s",
			loc, who, field, clip(d.Recorded), clip(d.Live), edited)
	default:
		sides := ""
		if d.Recorded != "" || d.Live != "" {
			sides = fmt.Sprintf("\n  cassette: %s\n  run:      %s", clip(d.Recorded), clip(d.Live))
		}
		return fmt.Sprintf("%s: replay %s: %s%s%s", loc, d.Kind, d.Reason, sides, edited)
	}
}

// describe is one side of a missing or extra divergence: a request in
// brief (its step, how many messages it has, and the last of them, as a
// mismatch shows a message: redacted, ids renamed by n).
func (r *Replayer) describe(n *normalizer, step int, req *core.Request) string {
	if req == nil || len(req.Messages) == 0 {
		return fmt.Sprintf("step %d, no messages", step)
	}
	c := comparer{red: r.red}
	last := c.renderMessage(n, toWireMessage(req.Messages[len(req.Messages)-1], r.red))
	plural := "s"
	if len(req.Messages) == 1 {
		plural = ""
	}
	return fmt.Sprintf("step %d, %d message%s, the last %s", step, len(req.Messages), plural, last)
}

func clip(s string) string {
	const max = 600
	if len(s) <= max {
		return s
	}
	return s[:max] + fmt.Sprintf("… (%d more bytes)", len(s)-max)
}

// DefaultIDPattern matches the ids core draws: sequential (w-1, run-2,
// send-3) and random (w_k3j5x2mq7t9a4bcd). The first group names the kind.
var DefaultIDPattern = regexp.MustCompile(`\b(run|w|send)(?:-[0-9]+|_[a-z2-7]{16})\b`)

var isoTime = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)`)

// ReplayOptions configure a Replayer.
type ReplayOptions struct {
	// Sleep, when set, waits each exchange's recorded duration (on the
	// run's clock) before answering, so that a replay under a virtual clock
	// keeps the recorded timing. Default: answer at once.
	Sleep func(ctx context.Context, d time.Duration) error
	// IDPattern finds runtime-drawn ids inside text, to normalize them;
	// default DefaultIDPattern. Its first group, if any, names the kind.
	IDPattern *regexp.Regexp
	// Secrets and SecretPatterns are redacted from the run's requests
	// before they are compared, as the recorder redacted the cassette's. A
	// [REDACTED] in the cassette matches any text in the run.
	Secrets        []string
	SecretPatterns []*regexp.Regexp
	// IgnoreStatus skips status blocks when comparing. Use it for
	// cassettes recorded with real goroutines, where how far a child had
	// got when its parent sealed a request is a race; under the simulator
	// it is deterministic and compared.
	IgnoreStatus bool
}

// Replayer is a core.Provider that answers from a cassette, offline, in
// lockstep: each request must match the next recorded exchange of its run.
// It never opens a network connection. It is safe for concurrent use.
//
// Runs are matched to recorded runs by agent and ordinal, not by run id,
// which differs from run to run: each agent's recorded runs form queues,
// and a run's first request claims the lowest-numbered unclaimed queue of
// its agent whose first exchange it matches (or, if none matches, the
// lowest unclaimed one, reporting the mismatch). Two children of the same
// agent whose first requests arrive in the other order than recorded are
// therefore still told apart by what they ask.
//
// Each request is compared with the recorded one by what it adds to its
// run's previous request (the earlier messages were compared already), so
// a replay costs time in proportion to the run's length, not its square.
type Replayer struct {
	c    *Cassette
	opts ReplayOptions
	red  *Redactor

	mu          sync.Mutex
	queues      map[string][]*queue // agent → its recorded runs by ordinal
	byRun       map[string]*queue   // live run id → the queue it claimed
	divergences []*Divergence
}

var _ core.Provider = (*Replayer)(nil)

type queue struct {
	agent   string
	ordinal int
	xs      []*Exchange
	// recPrior and recSame say, per exchange, what its request kept from
	// the run's previous one (see runState).
	recPrior []int
	recSame  []bool
	next     int
	claimed  bool
	// live follows the live run's requests; synced is false once one of
	// them diverged, after which its next request is compared whole.
	live   runState
	synced bool
	// rec and norm normalize the two sides' ids; they persist across the
	// run's requests because an id keeps its name for the whole run.
	rec, liveN *normalizer
}

// NewReplayer returns a Replayer over c.
func NewReplayer(c *Cassette, opts ReplayOptions) *Replayer {
	if opts.IDPattern == nil {
		opts.IDPattern = DefaultIDPattern
	}
	r := &Replayer{c: c, opts: opts, red: NewRedactor(opts.Secrets, opts.SecretPatterns...),
		queues: map[string][]*queue{}, byRun: map[string]*queue{}}
	byKey := map[queueKey]*queue{}
	states := map[queueKey]*runState{}
	for _, x := range c.Exchanges {
		k := queueKey{x.Agent, x.Ordinal}
		q := byKey[k]
		if q == nil {
			q = &queue{agent: x.Agent, ordinal: x.Ordinal, rec: newNormalizer(opts.IDPattern), liveN: newNormalizer(opts.IDPattern)}
			byKey[k] = q
			states[k] = &runState{}
			r.queues[x.Agent] = append(r.queues[x.Agent], q)
		}
		req := x.Request
		if req == nil {
			req = &core.Request{}
		}
		prior, same := states[k].advance(req)
		q.xs = append(q.xs, x)
		q.recPrior = append(q.recPrior, prior)
		q.recSame = append(q.recSame, same)
	}
	for _, qs := range r.queues {
		slices.SortFunc(qs, func(a, b *queue) int { return a.ordinal - b.ordinal })
	}
	return r
}

// Step answers a request from the cassette, or fails with a *Divergence.
func (r *Replayer) Step(ctx context.Context, req *core.Request) (*core.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r.mu.Lock()
	q, ok := r.byRun[req.Run]
	if !ok {
		var d *Divergence
		if q, d = r.claim(req); d != nil {
			r.divergences = append(r.divergences, d)
			r.mu.Unlock()
			return nil, d
		}
	}
	livePrior, liveSame := q.live.advance(req)
	if q.next >= len(q.xs) {
		last := q.xs[len(q.xs)-1]
		d := &Divergence{Kind: Missing, File: r.c.File, Line: last.Line, Agent: req.Agent, Ordinal: q.ordinal, Step: req.Step,
			Request: req, Reason: fmt.Sprintf("%s run %d made request step %d, but the cassette has no more exchanges of that run (its last, step %d, is at line %d)",
				req.Agent, q.ordinal, req.Step, last.Step, last.Line),
			Recorded: fmt.Sprintf("(no exchange: the run's last recorded request is step %d)", last.Step),
			Live:     r.describe(q.liveN.clone(), req.Step, req)}
		r.divergences = append(r.divergences, d)
		r.mu.Unlock()
		return nil, d
	}
	i := q.next
	q.next++
	x := q.xs[i]
	cmp := comparer{rec: q.rec, live: q.liveN, red: r.red, ignoreStatus: r.opts.IgnoreStatus}
	side := func(prior int, same bool) delta { return delta{prior: prior, same: same} }
	if !q.synced {
		livePrior, liveSame = 0, false
	}
	df := cmp.request(x.Step, x.Request, side(q.recPrior[i], q.recSame[i]), req.Step, req, side(livePrior, liveSame))
	q.synced = df == nil
	if df != nil {
		d := &Divergence{Kind: Mismatch, File: r.c.File, Line: x.Line, Agent: req.Agent, Ordinal: q.ordinal, Step: req.Step,
			Field: df.field, Path: df.path, Recorded: df.rec, Live: df.live, Exchange: x, Request: req}
		r.divergences = append(r.divergences, d)
		r.mu.Unlock()
		return nil, d
	}
	var resp *core.Response
	if x.Response != nil {
		resp = mapIDs(x.Response, q.rec, q.liveN)
	}
	r.mu.Unlock()

	if r.opts.Sleep != nil && x.Timing.Duration > 0 {
		if err := r.opts.Sleep(ctx, x.Timing.Duration); err != nil {
			return nil, err
		}
	}
	if x.Err != nil {
		e := *x.Err
		return nil, &e
	}
	return resp, nil
}

// claim binds a run's first request to one of its agent's recorded runs.
func (r *Replayer) claim(req *core.Request) (*queue, *Divergence) {
	qs := r.queues[req.Agent]
	var free []*queue
	for _, q := range qs {
		if !q.claimed {
			free = append(free, q)
		}
	}
	if len(free) == 0 {
		reason := fmt.Sprintf("%s started run %d (step %d), but the cassette has no exchanges of agent %q", req.Agent, len(qs)+1, req.Step, req.Agent)
		line := 0
		if len(qs) > 0 {
			reason = fmt.Sprintf("%s started run %d (step %d), but the cassette recorded only %d run(s) of it", req.Agent, len(qs)+1, req.Step, len(qs))
			last := qs[len(qs)-1]
			line = last.xs[len(last.xs)-1].Line
		}
		return nil, &Divergence{Kind: Missing, File: r.c.File, Line: line, Agent: req.Agent, Ordinal: len(qs) + 1, Step: req.Step,
			Request: req, Reason: reason, Recorded: fmt.Sprintf("(no exchange: no run %d of %s was recorded)", len(qs)+1, req.Agent),
			Live: r.describe(newNormalizer(r.opts.IDPattern), req.Step, req)}
	}
	pick := free[0]
	for _, q := range free {
		trial := comparer{rec: q.rec.clone(), live: q.liveN.clone(), red: r.red, ignoreStatus: r.opts.IgnoreStatus}
		if trial.request(q.xs[0].Step, q.xs[0].Request, delta{}, req.Step, req, delta{}) == nil {
			pick = q
			break
		}
	}
	pick.claimed, pick.synced = true, true
	r.byRun[req.Run] = pick
	return pick, nil
}

// Divergences returns the missing and mismatch divergences met so far, in
// the order the steps met them.
func (r *Replayer) Divergences() []*Divergence {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.divergences)
}

// Extra reports, per recorded run, the exchanges no request consumed, in
// cassette order. Call it once the run is over (after Runtime.Close, so
// that background children have finished).
func (r *Replayer) Extra() []*Divergence {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*Divergence
	for _, qs := range r.queues {
		for _, q := range qs {
			if q.next >= len(q.xs) {
				continue
			}
			x := q.xs[q.next]
			n := len(q.xs) - q.next
			reason := fmt.Sprintf("%s run %d step %d was recorded but never requested", x.Agent, q.ordinal, x.Step)
			if !q.claimed {
				reason = fmt.Sprintf("%s run %d was recorded (%d exchange(s) from step %d) but never started", x.Agent, q.ordinal, n, x.Step)
			} else if n > 1 {
				reason += fmt.Sprintf(", nor were %d more exchange(s) of that run", n-1)
			}
			live := fmt.Sprintf("(no request: the run ended before step %d)", x.Step)
			if !q.claimed {
				live = "(no request: the run never started)"
			}
			out = append(out, &Divergence{Kind: Extra, File: r.c.File, Line: x.Line, Agent: x.Agent, Ordinal: q.ordinal, Step: x.Step,
				Remaining: n, Exchange: x, Reason: reason, Recorded: r.describe(q.rec.clone(), x.Step, x.Request), Live: live})
		}
	}
	slices.SortFunc(out, func(a, b *Divergence) int { return a.Exchange.Seq - b.Exchange.Seq })
	return out
}

// Err returns the first divergence: the first missing or mismatch a step
// met, else the first extra exchange, else nil for a faithful replay.
func (r *Replayer) Err() error {
	if ds := r.Divergences(); len(ds) > 0 {
		return ds[0]
	}
	if ex := r.Extra(); len(ex) > 0 {
		return ex[0]
	}
	return nil
}

// normalizer renames the ids of one side in order of first appearance,
// per kind (<w#1>, <w#2>, <send#1>), and every RFC 3339 timestamp to
// <time>: ids and clocks differ from run to run, the conversation must not.
type normalizer struct {
	pat       *regexp.Regexp
	toCanon   map[string]string
	fromCanon map[string]string
	counts    map[string]int
}

func newNormalizer(pat *regexp.Regexp) *normalizer {
	return &normalizer{pat: pat, toCanon: map[string]string{}, fromCanon: map[string]string{}, counts: map[string]int{}}
}

func (n *normalizer) clone() *normalizer {
	c := newNormalizer(n.pat)
	for k, v := range n.toCanon {
		c.toCanon[k] = v
	}
	for k, v := range n.fromCanon {
		c.fromCanon[k] = v
	}
	for k, v := range n.counts {
		c.counts[k] = v
	}
	return c
}

func (n *normalizer) norm(s string) string {
	if s == "" {
		return s
	}
	// Every request repeats the run's whole history, so this runs often;
	// the cheap checks skip the regexps for text that cannot match.
	if strings.Contains(s, ":") {
		s = isoTime.ReplaceAllLiteralString(s, "<time>")
	}
	if n.pat == DefaultIDPattern && !strings.ContainsAny(s, "-_") {
		return s
	}
	return n.pat.ReplaceAllStringFunc(s, func(id string) string {
		if c, ok := n.toCanon[id]; ok {
			return c
		}
		kind := "id"
		if m := n.pat.FindStringSubmatch(id); len(m) > 1 && m[1] != "" {
			kind = m[1]
		}
		n.counts[kind]++
		c := "<" + kind + "#" + strconv.Itoa(n.counts[kind]) + ">"
		n.toCanon[id], n.fromCanon[c] = c, id
		return c
	})
}

// mapIDs rewrites the recorded ids in a recorded response into the ids the
// live run knows them by: a model that answered "result of w_k3j5..." in
// the recording must ask for the replay's w-1.
func mapIDs(resp *core.Response, rec, live *normalizer) *core.Response {
	f := func(s string) string {
		return rec.pat.ReplaceAllStringFunc(s, func(id string) string {
			if c, ok := rec.toCanon[id]; ok {
				if l, ok := live.fromCanon[c]; ok {
					return l
				}
			}
			return id
		})
	}
	out := &core.Response{Text: f(resp.Text), Usage: resp.Usage}
	if len(resp.Output) > 0 {
		out.Output = json.RawMessage(f(string(resp.Output)))
	}
	for _, c := range resp.ToolCalls {
		out.ToolCalls = append(out.ToolCalls, core.ToolCall{ID: c.ID, Name: c.Name, Arguments: f(c.Arguments)})
	}
	return out
}

type diff struct{ field, path, rec, live string }

// delta is what a request kept from its run's previous request: prior
// leading messages, and its setup when same.
type delta struct {
	prior int
	same  bool
}

// comparer compares a recorded request with a live one, field by field in a
// fixed order (step, system, messages, status, tools, output), and reports
// the first difference. Both sides are normalized as they are walked, in
// the same order, so ids are named by where they first appear.
//
// Text meant for the model is compared exactly (after normalization): the
// system text, user and assistant messages, descriptions. JSON the runtime
// or the model wrote (tool results, tool-call arguments, schemas) is
// compared as JSON values when both sides parse, so that a change of
// layout, key order or escapes is not a divergence and a change of meaning
// is.
type comparer struct {
	rec, live    *normalizer
	red          *Redactor
	ignoreStatus bool
}

func (c *comparer) text(field, rec, live string) *diff {
	r, l := c.rec.norm(rec), c.live.norm(live)
	if matchRedacted(r, l) {
		return nil
	}
	return &diff{field: field, rec: r, live: l}
}

func exact(field, rec, live string) *diff {
	if rec == live {
		return nil
	}
	return &diff{field: field, rec: rec, live: live}
}

// request compares two requests. Each side says what its request kept from
// its run's previous one; the messages both kept were compared with the
// previous request and are not compared again, and the setup (system text,
// tools, output schema) only when one side changed it.
func (c *comparer) request(recStep int, rec *core.Request, rd delta, liveStep int, live *core.Request, ld delta) *diff {
	if rec == nil {
		rec = &core.Request{}
	}
	if d := exact("step", strconv.Itoa(recStep), strconv.Itoa(liveStep)); d != nil {
		return d
	}
	setup := !(rd.same && ld.same)
	if setup {
		if d := c.text("system", c.red.String(rec.System), c.red.String(live.System)); d != nil {
			return d
		}
	}
	for i := min(rd.prior, ld.prior); i < max(len(rec.Messages), len(live.Messages)); i++ {
		field := fmt.Sprintf("messages[%d]", i)
		if i >= len(rec.Messages) {
			return &diff{field: field, rec: "(absent)", live: c.renderMessage(c.live, toWireMessage(live.Messages[i], c.red))}
		}
		if i >= len(live.Messages) {
			return &diff{field: field, rec: c.renderMessage(c.rec, toWireMessage(rec.Messages[i], c.red)), live: "(absent)"}
		}
		if d := c.message(field, toWireMessage(rec.Messages[i], c.red), toWireMessage(live.Messages[i], c.red)); d != nil {
			return d
		}
	}
	if !c.ignoreStatus {
		if d := c.status(toWireStatus(rec.Status, c.red), toWireStatus(live.Status, c.red)); d != nil {
			return d
		}
	}
	if !setup {
		return nil
	}
	for i := range max(len(rec.Tools), len(live.Tools)) {
		field := fmt.Sprintf("tools[%d]", i)
		if i >= len(rec.Tools) {
			return &diff{field: field, rec: "(absent)", live: live.Tools[i].Name}
		}
		if i >= len(live.Tools) {
			return &diff{field: field, rec: rec.Tools[i].Name, live: "(absent)"}
		}
		rt, lt := rec.Tools[i], live.Tools[i]
		if d := exact(field+".name", rt.Name, lt.Name); d != nil {
			return d
		}
		if d := c.text(field+".description", c.red.String(rt.Description), c.red.String(lt.Description)); d != nil {
			return d
		}
		if d := c.json(field+".parameters", string(c.red.JSON(rt.Parameters)), string(c.red.JSON(lt.Parameters))); d != nil {
			return d
		}
	}
	var ro, lo string
	if rec.Output != nil {
		ro = string(c.red.JSON(rec.Output.JSON()))
	}
	if live.Output != nil {
		lo = string(c.red.JSON(live.Output.JSON()))
	}
	return c.json("output", ro, lo)
}

func (c *comparer) message(field string, rec, live wireMessage) *diff {
	if d := exact(field+".role", rec.Role, live.Role); d != nil {
		return d
	}
	if d := exact(field+".guidance", strconv.FormatBool(rec.Guidance), strconv.FormatBool(live.Guidance)); d != nil {
		return d
	}
	content := c.text
	if rec.Role == string(core.RoleTool) {
		content = c.json // a tool's result: JSON the runtime or a tool wrote
	}
	if d := content(field+".content", rec.Content, live.Content); d != nil {
		return d
	}
	for j := range max(len(rec.ToolCalls), len(live.ToolCalls)) {
		f := fmt.Sprintf("%s.toolCalls[%d]", field, j)
		if j >= len(rec.ToolCalls) {
			return &diff{field: f, rec: "(absent)", live: live.ToolCalls[j].Name + " " + c.live.norm(live.ToolCalls[j].Arguments)}
		}
		if j >= len(live.ToolCalls) {
			return &diff{field: f, rec: rec.ToolCalls[j].Name + " " + c.rec.norm(rec.ToolCalls[j].Arguments), live: "(absent)"}
		}
		rc, lc := rec.ToolCalls[j], live.ToolCalls[j]
		if d := c.text(f+".id", rc.ID, lc.ID); d != nil {
			return d
		}
		if d := exact(f+".name", rc.Name, lc.Name); d != nil {
			return d
		}
		if d := c.json(f+".arguments", rc.Arguments, lc.Arguments); d != nil {
			return d
		}
	}
	if d := c.text(field+".toolCallId", rec.ToolCallID, live.ToolCallID); d != nil {
		return d
	}
	if d := exact(field+".toolName", rec.ToolName, live.ToolName); d != nil {
		return d
	}
	return exact(field+".isError", strconv.FormatBool(rec.IsError), strconv.FormatBool(live.IsError))
}

// status compares what a status block says, not when it was sampled: the
// elapsed seconds (and the text that shows them) are timing, not meaning.
func (c *comparer) status(rec, live *wireStatus) *diff {
	switch {
	case rec == nil && live == nil:
		return nil
	case rec == nil:
		return &diff{field: "status", rec: "(none)", live: c.live.norm(live.Text)}
	case live == nil:
		return &diff{field: "status", rec: c.rec.norm(rec.Text), live: "(none)"}
	}
	for i := range max(len(rec.Rows), len(live.Rows)) {
		field := fmt.Sprintf("status.rows[%d]", i)
		if i >= len(rec.Rows) {
			return &diff{field: field, rec: "(absent)", live: c.renderRow(c.live, live.Rows[i])}
		}
		if i >= len(live.Rows) {
			return &diff{field: field, rec: c.renderRow(c.rec, rec.Rows[i]), live: "(absent)"}
		}
		rr, lr := rec.Rows[i], live.Rows[i]
		if d := c.text(field+".id", rr.ID, lr.ID); d != nil {
			return d
		}
		if d := exact(field+".label", rr.Label, lr.Label); d != nil {
			return d
		}
		if d := exact(field+".state", rr.State, lr.State); d != nil {
			return d
		}
		if d := exact(field+".resultAvailable", strconv.FormatBool(rr.ResultAvailable), strconv.FormatBool(lr.ResultAvailable)); d != nil {
			return d
		}
	}
	return exact("status.omitted", strconv.Itoa(rec.Omitted), strconv.Itoa(live.Omitted))
}

func (c *comparer) renderMessage(n *normalizer, m wireMessage) string {
	var b strings.Builder
	b.WriteString(m.Role)
	if m.Guidance {
		b.WriteString(" (guidance)")
	}
	if m.ToolCallID != "" {
		b.WriteString(" answering " + n.norm(m.ToolCallID))
	}
	b.WriteString(": ")
	b.WriteString(n.norm(m.Content))
	for _, tc := range m.ToolCalls {
		b.WriteString(" [call " + tc.Name + " " + n.norm(tc.Arguments) + "]")
	}
	return b.String()
}

func (c *comparer) renderRow(n *normalizer, r wireRow) string {
	s := "- " + n.norm(r.ID) + " · " + r.Label + " · " + r.State
	if r.ResultAvailable {
		s += " · Result available"
	}
	return s
}

// matchRedacted compares two strings where a [REDACTED] in the recorded
// one stands for any non-empty text: the recorder removed a secret the
// replay may not know.
func matchRedacted(rec, live string) bool {
	if rec == live {
		return true
	}
	if !strings.Contains(rec, Redacted) {
		return false
	}
	parts := strings.Split(rec, Redacted)
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	re, err := regexp.Compile(`^(?s:` + strings.Join(parts, `.+?`) + `)$`)
	return err == nil && re.MatchString(live)
}
