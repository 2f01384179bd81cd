package harness

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/core/lifecycle"
	"github.com/crux-sim/crux-sim/core/trace"
	"github.com/crux-sim/crux-sim/internal/fewmap"
	"github.com/crux-sim/crux-sim/internal/slab"
	"github.com/crux-sim/crux-sim/platform"
	"github.com/crux-sim/crux-sim/sim"
)

// Invariant is a rule that must hold after every step of every run. It
// reads the trace entries recorded since the previous step; Facts carries
// what the invariants have learnt so far.
type Invariant struct {
	Name  string
	Check func(s *Facts, e *trace.Entry) string
	// Platform, when set, checks each event of a platform run (recorded
	// as a platform entry) before Check sees the entry.
	Platform func(s *Facts, e *platform.Event) string
	// End, when set, is checked once, when the run ends: after the last
	// step of a run of top-level agents, at the horizon of a platform run
	// (before its process closes).
	End func(s *Facts, end *End) string
}

// End is what an end-of-run check sees.
type End struct {
	// At is the virtual time the run ended at.
	At time.Time
	// Platform is the process alive at the end of a platform run; nil for
	// a run of top-level agents.
	Platform *platform.Platform
}

// Violation is a broken invariant, with where it broke.
type Violation struct {
	Invariant string
	Seed      int64
	// Step is the scheduling step after which it was found; Entry the
	// 1-based trace entry that broke it.
	Step    int
	Entry   int
	Message string
}

func (v Violation) String() string {
	if v.Step == 0 {
		// An observed run (Judge) has no scheduling steps and no seed.
		return fmt.Sprintf("invariant %q broken at entry #%d: %s", v.Invariant, v.Entry, v.Message)
	}
	return fmt.Sprintf("invariant %q broken at step %d (entry #%d, seed %d): %s", v.Invariant, v.Step, v.Entry, v.Seed, v.Message)
}

// Facts is what the checker knows of a run so far.
type Facts struct {
	// Works maps a Work id to what is known of it; Order lists the ids in
	// creation order, for deterministic iteration.
	Works map[string]*WorkFacts
	Order []string
	// Secrets are child outputs and failure texts, which must never appear
	// in status blocks, list or status projections, or log lines.
	Secrets []string
	// CallStarted maps a tool call id to the virtual time it started.
	CallStarted map[string]time.Duration
	// Sends maps a send identity to the receipt it got (nil until the
	// first send).
	Sends map[string]string
	// justDetached is the Work the previous entry detached: the detach
	// call's own receipt follows it.
	justDetached string
	// Tasks is what a platform run's events said of its durable tasks.
	Tasks map[string]*TaskFacts

	// secrets holds the first leakPrefix bytes of each of Secrets, in its
	// order; unreturned holds, per owner, the outputs of its Work that no
	// result call has returned yet (long enough to count), in creation
	// order, tagged with the Work's id. An entry is checked against
	// these, not against every Work and secret of the run.
	secrets    needles
	unreturned fewmap.Map[*needles]
	// room is the first backing of the facts, allocated with the checker
	// (nil for facts that have none); works and owners count what of its
	// Work facts and owners' sets are taken.
	room          *factsRoom
	works, owners int32 // at most the room's few
	// texts, when set, holds the keys of CallStarted (the run's texts).
	texts *slab.Texts
}

// factsRoom is where a run's facts are made first: a run has a few Work
// items, secrets and owners of background Work, and what it learns of
// them is allocated with its checker, not one by one.
type factsRoom struct {
	order, secrets [2]string
	works          [2]WorkFacts
	secretNeedles  [2]needle
	// owners are the first owners' sets of unreturned outputs, each
	// with two of ownerNeedles as the first backing of its list.
	owners       [1]needles
	ownerNeedles [2]needle
}

// WorkFacts is what the trace said of one Work item.
type WorkFacts struct {
	Owner    string
	State    string
	Detached bool
	Output   string
	Rejoined bool
	Cursor   int

	order  int // position in Facts.Order
	needle int // 1 + position among the owner's unreturned outputs; 0: none
}

// Caps checked by the invariants.
const (
	minSecretLen = 6
	// leakPrefix is how much of a secret must appear to count as a leak.
	leakPrefix = 40
)

// NoInvariants disables invariant checking.
var NoInvariants = []Invariant{}

// DefaultInvariants are the seed's rules, checked after every step.
func DefaultInvariants() []Invariant { return slices.Clone(defaultInvariants) }

// defaultInvariants is what DefaultInvariants returns copies of; Run uses
// it as it is.
var defaultInvariants = []Invariant{
	{Name: "legal-transitions", Check: checkLegal},
	{Name: "terminal-states-never-change", Check: checkTerminal},
	{Name: "no-child-content-in-status", Check: checkSecrets},
	{Name: "output-only-through-result", Check: checkOutputOnlyThroughResult},
	{Name: "not-found-for-detached-and-foreign", Check: checkNotFound},
	{Name: "send-idempotent", Check: checkSendIdempotent},
	{Name: "caps", Check: capsWithin(0)},
}

// defaultReads are the entry kinds each of defaultInvariants reads, in its
// order: its Check returns "" for an entry of any other kind (its first
// test is of the kind), so a run of the defaults asks each only about
// these. A run given invariants of its own (DefaultInvariants' copies
// among them, whose Check a caller may change) asks every one about every
// entry.
var defaultReads = [...][]trace.Kind{
	{trace.Work},                      // legal-transitions
	{trace.Work},                      // terminal-states-never-change
	{trace.Request, trace.ToolResult}, // no-child-content-in-status
	{trace.Request, trace.ToolResult}, // output-only-through-result
	{trace.ToolResult},                // not-found-for-detached-and-foreign
	{trace.ToolResult},                // send-idempotent
	{trace.Request, trace.ToolResult}, // caps
}

// platformDefaults are what a platform run checks unless
// Options.Invariants says otherwise: the defaults and then
// PlatformInvariants, made once; platformReads are the entry kinds their
// Checks read, in their order (of the platform's, only
// unblock-and-cancel-by-spawner has one, and it reads tool results).
var (
	platformDefaults = append(slices.Clip(DefaultInvariants()), PlatformInvariants()...)
	platformReads    = append(slices.Clip(defaultReads[:]), nil, nil, []trace.Kind{trace.ToolResult}, nil)
)

// readers are a list of invariants by what they read: those whose Check
// reads a Work entry, a request or a tool result, and those with a
// Platform check, each in the list's order.
type readers struct{ work, request, result, platform []Invariant }

// readersOf sorts invs by what reads says each Check reads.
func readersOf(invs []Invariant, reads [][]trace.Kind) *readers {
	by := &readers{}
	for i, kinds := range reads {
		for _, k := range kinds {
			switch k {
			case trace.Work:
				by.work = append(by.work, invs[i])
			case trace.Request:
				by.request = append(by.request, invs[i])
			case trace.ToolResult:
				by.result = append(by.result, invs[i])
			}
		}
		if invs[i].Platform != nil {
			by.platform = append(by.platform, invs[i])
		}
	}
	return by
}

// defaultsReading and platformReading are defaultInvariants and
// platformDefaults by what they read.
var (
	defaultsReading = readersOf(defaultInvariants, defaultReads[:])
	platformReading = readersOf(platformDefaults, platformReads)
)

// reading returns the invariants of the run that read an entry of kind k:
// all of them, but for a run of the defaults or a platform run's defaults
// only those their reads list for k.
func (c *checker) reading(k trace.Kind) []Invariant {
	if c.by == nil {
		return c.invs
	}
	switch k {
	case trace.Work:
		return c.by.work
	case trace.Request:
		return c.by.request
	case trace.ToolResult:
		return c.by.result
	}
	return nil
}

// readingPlatform returns the invariants of the run that check platform
// events: all of them (each is asked whether it has a Platform check), but
// for a list whose readers are known only those that have one.
func (c *checker) readingPlatform() []Invariant {
	if c.by == nil {
		return c.invs
	}
	return c.by.platform
}

type checker struct {
	r          *run
	invs       []Invariant
	state      Facts
	seen       int
	logSeen    int // log lines checked so far
	violations []Violation
	ended      bool
	final      End // what the end-of-run invariants see
	// by is invs by what they read, when invs is defaultInvariants or
	// platformDefaults itself (see reading); nil otherwise.
	by *readers
	// room is the first backing of the facts (Facts.room).
	room factsRoom
}

func newChecker(r *run, invs []Invariant) *checker {
	c := &checker{}
	c.init(r, invs, Facts{})
	return c
}

// init prepares c in place, for a run that holds it by value, knowing
// nothing yet: its facts are kept in the maps and lists of facts (emptied
// ones, of a run reused), or new ones.
func (c *checker) init(r *run, invs []Invariant, facts Facts) {
	if facts.Works == nil {
		facts = Facts{Works: map[string]*WorkFacts{}, CallStarted: map[string]time.Duration{}}
	}
	*c = checker{r: r, invs: invs, state: facts, by: readersFor(invs)}
	c.state.room = &c.room
	if r != nil && r.out != nil {
		c.state.texts = &r.out.texts
	}
	if c.state.Order == nil {
		c.state.Order = c.room.order[:0]
	}
	if c.state.Secrets == nil {
		c.state.Secrets = c.room.secrets[:0]
	}
	if c.state.secrets.list == nil {
		c.state.secrets.list = c.room.secretNeedles[:0]
	}
}

// readersFor returns invs by what they read, when invs is one of the
// lists whose reads are known; nil otherwise.
func readersFor(invs []Invariant) *readers {
	switch {
	case len(invs) == 0:
	case &invs[0] == &defaultInvariants[0] && len(invs) == len(defaultInvariants):
		return defaultsReading
	case &invs[0] == &platformDefaults[0] && len(invs) == len(platformDefaults):
		return platformReading
	}
	return nil
}

// SampledInvariants are DefaultInvariants for a run seen from outside,
// whose Work states are known only where a request showed them (a status
// row, a projection, a receipt): legal-transitions asks that each state
// seen be reachable from the one seen before it, since the states between
// two samples go unseen, and that Work first seen be unfinished (its
// work.ref came back before it ran to the end, or it was queued).
func SampledInvariants() []Invariant { return sampledInvariants(0) }

// sampledInvariants are SampledInvariants whose caps invariant allows a
// result wait slack past the cap.
func sampledInvariants(slack time.Duration) []Invariant {
	out := DefaultInvariants()
	for i := range out {
		switch out[i].Name {
		case "legal-transitions":
			out[i].Check = checkSampled
		case "caps":
			if slack > 0 {
				out[i].Check = capsWithin(slack)
			}
		}
	}
	return out
}

func checkSampled(s *Facts, e *trace.Entry) string {
	if e.Kind != trace.Work {
		return ""
	}
	to := lifecycle.State(e.To())
	if !to.Valid() {
		return fmt.Sprintf("%s was seen in state %q, which is not a Work state", e.Work, e.To())
	}
	w := s.Works[e.Work]
	if e.From() == "" || w == nil {
		return ""
	}
	if w.State != e.From() {
		return fmt.Sprintf("%s was seen to move from %s, but it was last seen %s", e.Work, e.From(), w.State)
	}
	if !lifecycle.Reachable(lifecycle.State(e.From()), to) {
		return fmt.Sprintf("%s was seen %s and then %s, which the lifecycle cannot reach", e.Work, e.From(), e.To())
	}
	return ""
}

// maxViolations bounds what one run reports; the first is what matters.
const maxViolations = 20

func (c *checker) step(a *sim.Actor) {
	if len(c.invs) == 0 {
		return
	}
	c.check(c.r.rec.Entries(), c.r.opts.Seed, c.r.sim.Steps())
	c.checkLogs()
}

// check runs the invariants over the entries not seen yet, as of a step.
func (c *checker) check(entries []trace.Entry, seed int64, step int) {
	for ; c.seen < len(entries); c.seen++ {
		e := &entries[c.seen]
		if e.Kind == platform.TraceKind {
			if c.r != nil {
				c.platform(c.seen)
			}
			if c.by != nil {
				// No invariant of a known list reads a platform entry, and
				// there are no facts to learn of one (learn).
				c.state.justDetached = ""
				continue
			}
		}
		invs := c.reading(e.Kind)
		for i := range invs {
			inv := &invs[i]
			if inv.Check == nil {
				continue
			}
			if msg := inv.Check(&c.state, e); msg != "" && len(c.violations) < maxViolations {
				c.violations = append(c.violations, Violation{Invariant: inv.Name, Seed: seed,
					Step: step, Entry: c.seen + 1, Message: msg})
			}
		}
		c.state.learn(e)
	}
}

// end checks the end-of-run invariants, once.
func (c *checker) end(at time.Time, p *platform.Platform) {
	if c.ended {
		return
	}
	c.ended = true
	c.final = End{At: at, Platform: p}
	for _, inv := range c.invs {
		if inv.End == nil {
			continue
		}
		if msg := inv.End(&c.state, &c.final); msg != "" {
			c.violate(inv.Name, c.r.rec.Len(), msg)
		}
	}
}

// learn updates the facts after the invariants have looked at an entry, so
// that each invariant sees the state as it was before the entry.
func (s *Facts) learn(e *trace.Entry) {
	s.justDetached = ""
	switch e.Kind {
	case trace.Work:
		w := s.Works[e.Work]
		if w == nil {
			if s.room != nil && int(s.works) < len(s.room.works) {
				w = &s.room.works[s.works]
				s.works++
				*w = WorkFacts{Owner: e.Run, order: len(s.Order)}
			} else {
				w = &WorkFacts{Owner: e.Run, order: len(s.Order)}
			}
			s.Works[e.Work] = w
			s.Order = append(s.Order, e.Work)
		}
		w.State = e.To()
	case trace.Detach:
		if w := s.Works[e.Work]; w != nil {
			w.Detached = true
		}
		s.justDetached = e.Work
	case trace.RunEnd:
		if e.Mode() != "background" {
			return
		}
		if w := s.Works[e.Work]; w != nil && e.Err() == "" {
			w.Output = e.Content
			s.awaitResult(e.Work, w)
		}
		secret := e.Content
		if e.Err() != "" {
			secret = e.Err()
		}
		if len(secret) >= minSecretLen {
			s.Secrets = append(s.Secrets, secret)
			s.secrets.add(secret[:min(len(secret), leakPrefix)], len(s.Secrets)-1, "")
			// A client that puts the content in a JSON string of its own
			// writes it escaped: a JSON output's quotes as \".
			if esc, ok := s.escapedPrefix(secret); ok {
				s.secrets.add(esc, len(s.Secrets)-1, "")
			}
		}
	case trace.ToolCall:
		if s.texts != nil {
			s.CallStarted[s.texts.Join(e.Run, "/", e.Call.ID)] = e.At
		} else {
			s.CallStarted[e.Run+"/"+e.Call.ID] = e.At
		}
	case trace.ToolResult:
		if e.Action == "result" {
			if w := s.Works[e.Work]; w != nil && w.Output != "" && e.Content == w.Output {
				w.Rejoined = true
				s.awaitResult(e.Work, w)
			}
		}
		if e.Action == "send" && !e.IsError {
			if s.Sends == nil {
				s.Sends = map[string]string{}
			}
			s.Sends[sendKey(e)] = e.Content
			var rec core.SendReceipt
			if json.Unmarshal([]byte(e.Content), &rec) == nil {
				if w := s.Works[rec.WorkID]; w != nil {
					w.Cursor = parseCursor(rec.Cursor, w.Cursor)
				}
			}
		}
	}
}

// awaitResult keeps the owner's unreturned outputs up to date with w:
// indexed while w has an output that no result returned, long enough to
// count as a leak.
func (s *Facts) awaitResult(id string, w *WorkFacts) {
	set, _ := s.unreturned.Get(w.Owner)
	if w.needle > 0 {
		set.remove(w.needle - 1)
		w.needle = 0
	}
	if w.Output == "" || w.Rejoined || len(w.Output) < minSecretLen {
		return
	}
	if set == nil {
		set = s.newOwner()
		s.unreturned.Set(w.Owner, set)
	}
	w.needle = 1 + set.add(w.Output, w.order, id)
}

// newOwner is an empty set of an owner's unreturned outputs: one of the
// room's, or a new one.
func (s *Facts) newOwner() *needles {
	if s.room == nil || int(s.owners) == len(s.room.owners) {
		return &needles{}
	}
	set := &s.room.owners[s.owners]
	*set = needles{list: s.room.ownerNeedles[2*s.owners : 2*s.owners : 2*s.owners+2]}
	s.owners++
	return set
}

func checkLegal(s *Facts, e *trace.Entry) string {
	if e.Kind != trace.Work {
		return ""
	}
	if e.From() == "" {
		if e.To() != string(lifecycle.Queued) {
			return fmt.Sprintf("%s was created %s; Work is created queued", e.Work, e.To())
		}
		return ""
	}
	if w := s.Works[e.Work]; w != nil && w.State != e.From() {
		return fmt.Sprintf("%s moved from %s, but it was %s", e.Work, e.From(), w.State)
	}
	if !lifecycle.Legal(lifecycle.State(e.From()), lifecycle.State(e.To())) {
		return fmt.Sprintf("%s moved %s → %s, which the lifecycle does not allow", e.Work, e.From(), e.To())
	}
	return ""
}

func checkTerminal(s *Facts, e *trace.Entry) string {
	if e.Kind != trace.Work || e.From() == "" {
		return ""
	}
	if w := s.Works[e.Work]; w != nil && lifecycle.State(w.State).Terminal() {
		return fmt.Sprintf("%s was %s, a terminal state, and then moved to %s", e.Work, w.State, e.To())
	}
	return ""
}

// checkSecrets: no child output or failure text in a status block, a list
// or status projection, or an unfinished result's projection.
func checkSecrets(s *Facts, e *trace.Entry) string {
	if len(s.Secrets) == 0 {
		return ""
	}
	var where string
	var texts []string
	switch {
	case e.Kind == trace.Request && len(e.Status()) > 0:
		where, texts = "a status row", e.Status()
	case e.Kind == trace.ToolResult && (e.Action == "list" || e.Action == "status" || e.Action == "cancel" || e.Action == "detach" || e.Action == "send"):
		where, texts = "a work "+e.Action+" result", []string{e.Content}
	case e.Kind == trace.ToolResult && e.Action == "result" && isProjection(e.Content):
		where, texts = "a work result projection", []string{e.Content}
	default:
		return ""
	}
	for _, t := range texts {
		// A status row cuts labels, so a leak may be only a prefix: the
		// set holds each secret's first leakPrefix bytes.
		if i := s.secrets.first(t, nil); i >= 0 {
			return fmt.Sprintf("%s of %s carries child content %q", where, e.Run, abbreviate(s.Secrets[s.secrets.list[i].order]))
		}
	}
	return ""
}

// returnedAlike reports whether a result call returned the text of the
// needle at i to its owner already, as another Work's output: a needle
// leaves the set (not live) when its Work is rejoined. Only a text some
// needle matched is asked about, so the scan costs nothing on a run whose
// texts carry no child output.
func (s *Facts) returnedAlike(set *needles, i int) bool {
	text := set.list[i].s
	for j := range set.list {
		if nd := &set.list[j]; !nd.live && j != i && nd.s == text {
			if w := s.Works[nd.tag]; w != nil && w.Rejoined {
				return true
			}
		}
	}
	return false
}

// escapedPrefix is the first leakPrefix bytes of s as a JSON string's
// content (between its quotes, with the escapes every JSON encoder
// writes: quotes, backslashes and control characters), when that differs
// from s; written in the run's texts when it has them.
func (s *Facts) escapedPrefix(secret string) (string, bool) {
	var room [leakPrefix + 6]byte
	b := room[:0]
	escaped := false
	// Byte by byte: bytes past ASCII pass through as they are (an encoder
	// that writes UTF-8 writes them so), and only the first leakPrefix
	// bytes are needed.
	for i := 0; i < len(secret) && len(b) < leakPrefix; i++ {
		switch c := secret[i]; {
		case c == '"' || c == '\\':
			b, escaped = append(b, '\\', c), true
		case c == '\n':
			b, escaped = append(b, `\n`...), true
		case c == '\t':
			b, escaped = append(b, `\t`...), true
		case c == '\r':
			b, escaped = append(b, `\r`...), true
		case c < 0x20:
			b, escaped = fmt.Appendf(b, `\u%04x`, c), true
		default:
			b = append(b, c)
		}
	}
	if !escaped {
		return "", false
	}
	b = b[:min(len(b), leakPrefix)]
	if s.texts != nil {
		return s.texts.Join(string(b)), true // the conversion does not escape: Join copies
	}
	return string(b), true
}

func isProjection(content string) bool {
	return strings.HasPrefix(content, `{"work":{"kind":"work.ref"`)
}

// checkOutputOnlyThroughResult: until a result call returned a child's
// output to its owner, the owner's requests and other tool results do not
// carry it.
func checkOutputOnlyThroughResult(s *Facts, e *trace.Entry) string {
	if e.Kind != trace.Request && e.Kind != trace.ToolResult {
		return ""
	}
	set, _ := s.unreturned.Get(e.Run)
	if set == nil || set.live == 0 {
		return ""
	}
	// A text a result call already handed the owner for another of its
	// Work is known to it, whichever child's it is: two children that
	// answer alike leak nothing when the owner reads one, then the other.
	unknown := func(i int) bool { return !s.returnedAlike(set, i) }
	if e.Kind == trace.ToolResult {
		i := set.first(e.Content, func(i int) bool {
			// The result call that returns the output is how it may arrive:
			// this Work's, or another's that answered alike.
			if e.Action == "result" && e.Content == set.list[i].s {
				if w := s.Works[e.Work]; e.Work == set.list[i].tag || w != nil && w.Owner == e.Run && w.Output == e.Content {
					return false
				}
			}
			return unknown(i)
		})
		if i < 0 {
			return ""
		}
		return fmt.Sprintf("the output of %s reached %s through a %s call, not a work result", set.list[i].tag, e.Run, e.Call.Name)
	}
	// The Work of least order whose output any message or row carries.
	best := -1
	consider := func(i int) {
		if i >= 0 && (best < 0 || set.list[i].order < set.list[best].order) {
			best = i
		}
	}
	for _, m := range e.Messages() {
		consider(set.first(m.Content, unknown))
	}
	for _, row := range e.Status() {
		consider(set.first(row, unknown))
	}
	if best < 0 {
		return ""
	}
	id, out := set.list[best].tag, set.list[best].s
	for _, m := range e.Messages() {
		if strings.Contains(m.Content, out) {
			return fmt.Sprintf("the output of %s is in a request message of %s before a work result returned it", id, e.Run)
		}
	}
	return fmt.Sprintf("the output of %s is in a status row of %s", id, e.Run)
}

// checkNotFound: an id action on a detached, foreign or unknown id answers
// exactly {"status":"not_found"}.
func checkNotFound(s *Facts, e *trace.Entry) string {
	if e.Kind != trace.ToolResult || e.Action == "" || e.Action == "list" || e.Work == "" {
		return ""
	}
	if e.IsError && strings.Contains(e.Content, `"code":"invalid_arguments"`) {
		return "" // a malformed call is refused before any lookup
	}
	w := s.Works[e.Work]
	var why string
	switch {
	case w == nil:
		why = "unknown"
	case w.Owner != e.Run:
		why = "owned by " + w.Owner
	case w.Detached && e.Action == "detach" && s.justDetached == e.Work:
		return "" // the receipt of the detach that just happened
	case w.Detached:
		why = "detached"
	default:
		return ""
	}
	if e.Action == "send" {
		if _, repeat := s.Sends[sendKey(e)]; repeat {
			return ""
		}
	}
	if e.Content != `{"status":"not_found"}` || e.IsError {
		return fmt.Sprintf("%s %s of %s (%s) answered %s, not {\"status\":\"not_found\"}", e.Action, e.Work, e.Run, why, abbreviate(e.Content))
	}
	return ""
}

// checkSendIdempotent: one tool-call identity gets one receipt, and
// accepted cursors count up by one per Work.
func checkSendIdempotent(s *Facts, e *trace.Entry) string {
	if e.Kind != trace.ToolResult || e.Action != "send" || e.IsError {
		return ""
	}
	key := sendKey(e)
	if prev, ok := s.Sends[key]; ok {
		if prev != e.Content {
			return fmt.Sprintf("the repeated send %s got receipt %s, the first got %s", e.Call.ID, e.Content, prev)
		}
		return ""
	}
	var rec core.SendReceipt
	if json.Unmarshal([]byte(e.Content), &rec) != nil || rec.WorkID == "" {
		return ""
	}
	if w := s.Works[rec.WorkID]; w != nil && rec.Cursor != strconv.Itoa(w.Cursor+1) {
		return fmt.Sprintf("send to %s got cursor %s after cursor %d", rec.WorkID, rec.Cursor, w.Cursor)
	}
	return ""
}

// sendKey is a send's identity in Facts.Sends: the run, the tool call
// and the provider step that made it.
func sendKey(e *trace.Entry) string {
	return e.Run + "/" + e.Call.ID + "/" + strconv.Itoa(e.Step)
}

// parseCursor reads a send receipt's cursor, as fmt.Sscan reads an int;
// a cursor that is not one leaves the last known cursor. A plain decimal
// (what the runtime writes) is read by strconv; anything else (a sign, a
// base prefix, a leading zero, which Sscan reads as octal) by Sscan.
func parseCursor(s string, last int) int {
	if s == "0" || s != "" && s[0] >= '1' && s[0] <= '9' {
		if n, err := strconv.Atoi(s); err == nil {
			return n
		}
	}
	v := last // escapes to Sscan: made only on this path
	fmt.Sscan(s, &v)
	return v
}

// capsWithin checks at most 12 status rows, 50 listed entries, and no
// result wait past 30 s, or past 30 s and slack for a run seen from
// outside in real time (Observed.ResultWaitSlack); a simulated run has
// no slack.
func capsWithin(slack time.Duration) func(s *Facts, e *trace.Entry) string {
	return func(s *Facts, e *trace.Entry) string { return checkCaps(s, e, slack) }
}

func checkCaps(s *Facts, e *trace.Entry, slack time.Duration) string {
	switch {
	case e.Kind == trace.Request && len(e.Status()) > core.MaxStatusRows:
		return fmt.Sprintf("a status block of %s has %d rows (cap %d)", e.Run, len(e.Status()), core.MaxStatusRows)
	case e.Kind == trace.ToolResult && e.Action == "list" && !e.IsError:
		var list []json.RawMessage
		if json.Unmarshal([]byte(e.Content), &list) == nil && len(list) > core.MaxListed {
			return fmt.Sprintf("a list returned %d entries (cap %d)", len(list), core.MaxListed)
		}
	case e.Kind == trace.ToolResult && e.Action == "result":
		// The key is looked up from bytes on the stack, not concatenated.
		var room [64]byte
		key := append(append(append(room[:0], e.Run...), '/'), e.Call.ID...)
		start, ok := s.CallStarted[string(key)]
		if !ok {
			break
		}
		// A result waits for the requested timeout, capped at 30 seconds.
		limit, what := core.MaxResultWait, "cap"
		if t, asked := requestedWait(e.Call.Arguments); asked && t < limit {
			limit, what = max(t, 0), "its timeout"
		}
		if e.At-start > limit+slack {
			if slack > 0 {
				return fmt.Sprintf("a result call of %s waited %s (%s %s, and %s for real time)", e.Run, e.At-start, what, limit, slack)
			}
			return fmt.Sprintf("a result call of %s waited %s (%s %s)", e.Run, e.At-start, what, limit)
		}
	}
	return ""
}

// requestedWait is the timeout a work result call's arguments ask for,
// when they ask for one the runtime reads (a call with a bad one is
// answered with an error, which caps does not look at). The value is read
// where it stands, without decoding the arguments: caps runs on every
// entry of every run, and a timeout is a plain string. Of repeated keys the
// last counts, as the runtime's decoder reads them; an escaped one is
// decoded.
func requestedWait(args string) (time.Duration, bool) {
	const key = `"timeout"`
	val, found := "", false
	for rest := args; ; {
		i := strings.Index(rest, key)
		if i < 0 {
			break
		}
		rest = rest[i+len(key):]
		after := strings.TrimLeft(rest, " \t\r\n")
		if !strings.HasPrefix(after, ":") {
			continue
		}
		after = strings.TrimLeft(after[1:], " \t\r\n")
		if !strings.HasPrefix(after, `"`) {
			val, found = "", false // null, or not a string: no timeout the runtime reads
			continue
		}
		end := strings.IndexByte(after[1:], '"')
		if end < 0 {
			return 0, false
		}
		if v := after[1 : 1+end]; !strings.Contains(v, `\`) {
			val, found = v, true
			continue
		}
		var v string // escaped: decoded, as rarely as a model writes one
		if dec := json.NewDecoder(strings.NewReader(after)); dec.Decode(&v) != nil {
			return 0, false
		}
		val, found = v, true
	}
	if !found {
		return 0, false
	}
	d, err := core.ParseDuration(val)
	return d, err == nil
}

func abbreviate(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}
