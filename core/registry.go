package core

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/crux-sim/crux-sim/core/lifecycle"
)

// work is one Work item. All fields are guarded by registry.mu.
type work struct {
	ref WorkRef
	// names are the wait reason of a result action on it, "result w-1",
	// and the name of its actor, "w-1 research", in one text:
	// "result w-1 research" (see resultReason and actorName).
	// Its label (see label) is the end of names.
	names     string
	owner     string
	startedBy uint64 // the sequence number of the run that started it
	state     lifecycle.State
	created   time.Time
	started   time.Time
	finished  time.Time
	// stamps are the three times as projections write them, each written
	// once it is set (a time never changes once set; see stampsLocked).
	stamps   [3]string
	isAgent  bool
	detached bool
	rejoined bool
	// singleLine: its id and label are single-line already, as a status
	// row shows them (see SafeLabel), read once as it is made.
	singleLine bool
	output     *Output
	failure    error

	done   Signal // closed once terminal
	cancel canceller
	scope  cancelScope // cancel's scope, when the executor watches signals
	// A background child agent runs from child, a background tool by run
	// (nil for an agent).
	child childRun
	run   func(ctx context.Context, self *work) (*Output, error)

	inbox     []Message // guidance accepted and not yet delivered
	sent      int       // guidance accepted (the cursor)
	delivered int

	links [numLists]workLink // its places in its owner's views; see workindex.go
}

// sendKey is the identity of a send: the Work it addresses and the tool
// call that made it, at its owner's turn.
type sendKey struct {
	owner  string
	run    uint64
	turn   int
	callID string
	work   string
}

// sendRecord is the identity record of a send: the digest of the message,
// never its text.
type sendRecord struct {
	digest  [sha256.Size]byte
	receipt SendReceipt
}

// registry is the process-local Work registry of one Runtime, allocated
// with it. Its lists and maps are made when first needed: a runtime whose
// runs start no background Work (a test of foreground children, say)
// never needs them, and one whose runs start a few needs no map to find
// them.
type registry struct {
	rt *Runtime

	mu  sync.Mutex
	all []*work // creation order
	// first is the first owner of Work's index (a run's Work has one
	// owner mostly: the coordinator), held here, and owners are the
	// others', in the order of their first Work. Either list is looked
	// along while short; past manyWorks a map finds its entries (see
	// workLocked and ownerLocked).
	first   ownerWork
	owners  []*ownerWork
	works   map[string]*work      // nil while all is short
	byOwner map[string]*ownerWork // nil while owners is short
	sends   map[sendKey]sendRecord
	// queue holds queued Work in admission order; a cancelled item stays
	// in it until it reaches the front, where it is skipped, so that a
	// cancel does not search the queue.
	queue   []*work
	running int
	closed  bool
	// allRoom and firstRoom are the first room of all and of first.all:
	// a run's first few Work items take no list of their own.
	allRoom, firstRoom [2]*work
}

// Errors the registry gives a model; see toolError for how they are shown.
var (
	errConflict    = &ModelError{Code: "conflict"}
	errCapacity    = &ModelError{Code: "capacity_exceeded", Retryable: true}
	errDuplicateID = &ModelError{Code: "duplicate_id"}
)

// accept admits a background call of an owner's run, under the tool key
// label: a capacity error past the owner's bound, an error for an id
// already in use, and otherwise a new Work that is running or queued. (A
// repeated call identity never reaches it; see occurrences.) The ref it
// returns is the Work's own, which never changes once made: the events of
// the call that started it point to it. The Work runs run, a background
// tool's, or (run nil) the child agent's run that child describes.
func (r *registry) accept(owner string, startedBy uint64, label, target string, child childRun,
	run func(ctx context.Context, self *work) (*Output, error)) (*WorkRef, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, &ModelError{Code: "unavailable", Message: "the runtime is closing; no new background work is accepted"}
	}
	// Detached Work is out of its owner's reach, so it no longer counts;
	// it keeps its concurrency slot while it runs.
	ow := r.ownerLocked(owner)
	outstanding := 0
	if ow != nil {
		outstanding = ow.open.n
	}
	if limit := r.rt.opts.MaxOutstanding; outstanding >= limit {
		return nil, errCapacity.with(fmt.Sprintf(
			"%d background work items are still outstanding (limit %d); wait for or cancel some, then retry", outstanding, limit))
	}
	id := r.rt.opts.IDs.NewID(IDWork)
	if r.workLocked(id) != nil {
		return nil, errDuplicateID.with(fmt.Sprintf(
			"the runtime's id source returned %q, which already names background work; nothing was started", id))
	}
	now := r.rt.opts.Clock.Now()
	w := &work{
		ref:        newRef(id, target),
		names:      workNames(id, label),
		singleLine: singleLine(id) && singleLine(label),
		owner:      owner,
		startedBy:  startedBy,
		isAgent:    run == nil,
		state:      lifecycle.Queued,
		created:    now,
		done:       NewSignal(r.rt.opts.Executor),
		child:      child,
		run:        run,
	}
	if ow == nil {
		ow = r.addOwnerLocked(owner)
	}
	if r.all == nil {
		r.all = r.allRoom[:0]
	}
	r.all = append(r.all, w)
	switch {
	case r.works != nil:
		r.works[w.ref.ID] = w
	case len(r.all) > manyWorks:
		r.works = make(map[string]*work, 2*len(r.all))
		for _, x := range r.all {
			r.works[x.ref.ID] = x
		}
	}
	ow.add(w)
	r.emitTransition(w, "", lifecycle.Queued, 0)
	if r.running < r.rt.opts.MaxConcurrent {
		r.startLocked(w)
	} else {
		r.queue = append(r.queue, w)
	}
	return &w.ref, nil
}

// manyWorks is how many Work items, or owners of Work, the registry holds
// before a map finds one faster than a look along its list.
const manyWorks = 8

// workLocked returns the Work item with the id, or nil.
func (r *registry) workLocked(id string) *work {
	if r.works != nil {
		return r.works[id]
	}
	for _, w := range r.all {
		if w.ref.ID == id {
			return w
		}
	}
	return nil
}

// ownerLocked returns the owner's index of its Work, or nil for an owner
// that has started none.
func (r *registry) ownerLocked(owner string) *ownerWork {
	if r.byOwner != nil {
		return r.byOwner[owner]
	}
	if r.first.known && r.first.owner == owner {
		return &r.first
	}
	for _, ow := range r.owners {
		if ow.owner == owner {
			return ow
		}
	}
	return nil
}

// addOwnerLocked makes the index of an owner's Work, at its first.
func (r *registry) addOwnerLocked(owner string) *ownerWork {
	if !r.first.known {
		r.first.init(owner)
		r.first.all = r.firstRoom[:0]
		return &r.first
	}
	ow := new(ownerWork)
	ow.init(owner)
	r.owners = append(r.owners, ow)
	switch {
	case r.byOwner != nil:
		r.byOwner[owner] = ow
	case len(r.owners) >= manyWorks:
		r.byOwner = make(map[string]*ownerWork, 2*(len(r.owners)+1))
		r.byOwner[r.first.owner] = &r.first
		for _, o := range r.owners {
			r.byOwner[o.owner] = o
		}
	}
	return ow
}

// startLocked moves w from queued to running and starts its child actor.
func (r *registry) startLocked(w *work) {
	r.transitionLocked(w, lifecycle.Start)
	r.running++
	// Its context is cancelled by a cancel of the Work, by Close (which
	// cancels every unfinished item) and at its end.
	ctx, cancel := withCancel(r.rt.opts.Executor, context.Background(), &w.scope)
	w.cancel = cancel
	r.rt.opts.Executor.Go(w.actorName(), func() { r.runChild(ctx, w) })
}

// runChild is the body of a background child's actor.
func (r *registry) runChild(ctx context.Context, w *work) {
	out, err := r.runWork(ctx, w)
	r.rt.opts.Executor.Yield(Point{Kind: PointWorkTransition, Work: w.ref.ID, Agent: w.ref.TargetID, Event: "finish"})
	r.finish(w, ctx, out, err)
}

// runWork runs what the Work runs: a background tool's run, or the child
// agent's. A panic in it fails the Work, as any other failure of the child
// does, and is never the end of the process: the child runs on an actor of
// its own, where nothing else would recover it. (An agent's run recovers
// its own panics; a background tool's has no run around it.)
func (r *registry) runWork(ctx context.Context, w *work) (out *Output, err error) {
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, errorf("background work %s (%s) panicked: %v", w.ref.ID, w.label(), p)
		}
	}()
	if w.run != nil {
		return w.run(ctx, w)
	}
	return r.rt.runBackground(ctx, w)
}

func (r *registry) finish(w *work, ctx context.Context, out *Output, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	stoppedByCancel := err != nil && ctx.Err() != nil && isCancellation(err)
	ev := lifecycle.Finish(w.state, err == nil, stoppedByCancel)
	if err == nil {
		w.output = out
	} else {
		w.failure = err
	}
	r.transitionLocked(w, ev)
	w.cancel.cancel(nil)
	r.running--
	r.startQueuedLocked()
}

func (r *registry) startQueuedLocked() {
	for r.running < r.rt.opts.MaxConcurrent && len(r.queue) > 0 {
		next := r.queue[0]
		r.queue[0] = nil
		r.queue = r.queue[1:]
		if next.state == lifecycle.Queued { // else cancelled while queued
			r.startLocked(next)
		}
	}
}

// transitionLocked applies one lifecycle event. An illegal transition is a
// bug in the runtime, so it panics rather than corrupt the registry.
func (r *registry) transitionLocked(w *work, ev lifecycle.Event) {
	from := w.state
	to, err := lifecycle.Next(from, ev)
	if err != nil {
		panic(fmt.Sprintf("crux-sim: %s: %v", w.ref.ID, err))
	}
	w.state = to
	now := r.rt.opts.Clock.Now()
	switch {
	case to == lifecycle.Running && from == lifecycle.Queued:
		w.started = now
	case to.Terminal():
		w.finished = now
		r.ownerLocked(w.owner).finish(w)
		w.done.Close()
	}
	r.emitTransition(w, from, to, ev)
}

func (r *registry) emitTransition(w *work, from, to lifecycle.State, ev lifecycle.Event) {
	name := ""
	if ev != 0 {
		name = ev.String()
	}
	e := Event{Kind: EventWorkTransition, Run: w.owner, Work: w.ref.ID, Agent: w.ref.TargetID} // see Runtime.emit
	e.Label, e.From, e.To, e.Transition = w.label(), from, to, name
	r.rt.emit(e)
}

// visible returns the owner's attached Work with the id, or nil.
func (r *registry) visibleLocked(owner, id string) *work {
	w := r.workLocked(id)
	if w == nil || w.owner != owner || w.detached {
		return nil
	}
	return w
}

func (r *registry) projectLocked(w *work) WorkStatus {
	created, started, finished := w.stampsLocked()
	return WorkStatus{
		Work:            w.ref,
		TargetLabel:     w.label(),
		State:           w.state,
		Attachment:      "attached",
		Attempt:         1,
		CreatedAt:       created,
		StartedAt:       started,
		FinishedAt:      finished,
		ResultAvailable: w.state == lifecycle.Completed,
	}
}

// stampsLocked returns the work's creation, start and finish times as
// timestamps ("" for a time not yet set). Each is written the first time
// it is asked for once set, and a time equal to the one before it (Work
// that starts as it is created, say) shares that one's text.
func (w *work) stampsLocked() (created, started, finished string) {
	times := [3]time.Time{w.created, w.started, w.finished}
	for i, t := range times {
		switch {
		case w.stamps[i] != "" || t.IsZero():
		case i > 0 && t.Equal(times[i-1]) && w.stamps[i-1] != "":
			w.stamps[i] = w.stamps[i-1]
		default:
			w.stamps[i] = timestamp(t)
		}
	}
	return w.stamps[0], w.stamps[1], w.stamps[2]
}

// MaxListed is the most entries a list action returns.
const MaxListed = 50

func (r *registry) list(owner string) []WorkStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := []WorkStatus{}
	if ow := r.ownerLocked(owner); ow != nil {
		for w := ow.visible.head; w != nil && len(out) < MaxListed; w = w.links[listVisible].next {
			out = append(out, r.projectLocked(w))
		}
	}
	return out
}

func (r *registry) status(owner, id string) (WorkStatus, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.visibleLocked(owner, id)
	if w == nil {
		return WorkStatus{}, false
	}
	return r.projectLocked(w), true
}

// resultOutcome is what a result action found: when the Work is
// unfinished, the reason to wait on it for, and whether its status was
// projected (see peekResult).
type resultOutcome struct {
	found     bool
	output    *Output
	projected bool
	reason    string
}

// resultPrefix opens the wait reason of a result action.
const resultPrefix = "result "

// workNames writes a Work item's names (see work.names).
func workNames(id, label string) string { return resultPrefix + id + " " + label }

// resultReason is the reason a result action waits on the Work for.
func (w *work) resultReason() string { return w.names[:len(resultPrefix)+len(w.ref.ID)] }

// actorName is the name of the actor that runs the Work.
func (w *work) actorName() string { return w.names[len(resultPrefix):] }

// label is the Work's label, the tool key it was started under.
func (w *work) label() string { return w.names[len(resultPrefix)+len(w.ref.ID)+1:] }

// peekResult looks at the owner's Work for a result action: its output
// when it has completed, else its status projection, written to st, and
// the signal of its end. An action that will wait for unfinished Work
// (wait) has no use for its status now, only once the wait is over: its
// status is projected then only when it has finished (failed or
// cancelled), which the action answers at once.
func (r *registry) peekResult(owner, id string, wait bool, st *WorkStatus) (resultOutcome, <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.visibleLocked(owner, id)
	if w == nil {
		return resultOutcome{}, nil
	}
	if w.state == lifecycle.Completed {
		w.rejoined = true
		return resultOutcome{found: true, output: w.output}, nil
	}
	got := resultOutcome{found: true, reason: w.resultReason()}
	if !wait || w.state.Terminal() {
		*st, got.projected = r.projectLocked(w), true
	}
	return got, w.done.C()
}

func (r *registry) cancel(owner, id string) (CancelReceipt, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.visibleLocked(owner, id)
	if w == nil {
		return CancelReceipt{}, false
	}
	return r.cancelLocked(w), true
}

func (r *registry) cancelLocked(w *work) CancelReceipt {
	at := timestamp(r.rt.opts.Clock.Now())
	if r.rt.opts.Testing.Defects.CancelOverwritesTerminal && w.state.Terminal() && w.state != lifecycle.Cancelled {
		// A planted defect: bypass the lifecycle, as a buggy runtime would.
		from := w.state
		w.state = lifecycle.Cancelled
		r.emitTransition(w, from, lifecycle.Cancelled, lifecycle.Cancel)
		return CancelReceipt{WorkID: w.ref.ID, Accepted: true, State: w.state, AcceptedAt: at}
	}
	accepted, next := lifecycle.CancelOutcome(w.state)
	if accepted && next != w.state {
		wasQueued := w.state == lifecycle.Queued
		r.transitionLocked(w, lifecycle.Cancel)
		if !wasQueued { // a queued item is skipped when it reaches the queue's front
			w.cancel.cancel(nil)
		}
	}
	return CancelReceipt{WorkID: w.ref.ID, Accepted: accepted, State: w.state, AcceptedAt: at}
}

func (r *registry) detach(owner, id string) (DetachReceipt, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.visibleLocked(owner, id)
	if w == nil {
		return DetachReceipt{}, false
	}
	r.ownerLocked(owner).detach(w)
	w.detached = true
	ev := Event{Kind: EventWorkDetached, Run: owner, Work: id, Agent: w.ref.TargetID} // see Runtime.emit
	ev.Label, ev.To = w.label(), w.state
	r.rt.emit(ev)
	return DetachReceipt{ID: id, Detached: true}, true
}

// send accepts guidance for a child. Its checks come in the contract's
// order: an id the owner cannot see answers not-found (ok=false) before
// anything else, then the target must be an Agent child, then the message
// must be non-empty; only then is the identity record consulted (a
// repeated identity returns its receipt even once the child has ended),
// and last the child must be unfinished.
func (r *registry) send(key sendKey, message *string) (SendReceipt, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	id := key.work
	w := r.visibleLocked(key.owner, id)
	if w == nil {
		return SendReceipt{}, false, nil
	}
	if !w.isAgent {
		return SendReceipt{}, true, &ModelError{Code: "not_an_agent", Message: fmt.Sprintf(
			"send is only for Agent children; %s runs %q, which has no provider step to receive guidance", id, w.label())}
	}
	if message == nil || *message == "" {
		return SendReceipt{}, true, &ModelError{Code: "invalid_arguments", Message: "send requires a non-empty message"}
	}
	digest := sha256.Sum256([]byte(*message))
	if rec, ok := r.sends[key]; ok {
		if rec.digest != digest {
			return SendReceipt{}, true, errConflict.with(fmt.Sprintf(
				"tool call %s already sent a different message to %s", key.callID, id))
		}
		return rec.receipt, true, nil
	}
	if w.state.Terminal() {
		return SendReceipt{}, true, &ModelError{Code: "terminal", Message: fmt.Sprintf(
			"send needs unfinished work; %s is already %s", id, w.state)}
	}
	w.sent++
	w.inbox = append(w.inbox, Message{Role: RoleUser, Content: *message, Guidance: true})
	rec := SendReceipt{WorkID: id, ID: r.rt.opts.IDs.NewID(IDSend), Cursor: strconv.Itoa(w.sent),
		AcceptedAt: timestamp(r.rt.opts.Clock.Now()), Outcome: "accepted"}
	if r.sends == nil {
		r.sends = map[sendKey]sendRecord{}
	}
	r.sends[key] = sendRecord{digest: digest, receipt: rec}
	ev := Event{Kind: EventSendAccepted, Run: key.owner, Work: id, Agent: w.ref.TargetID} // see Runtime.emit
	ev.Label, ev.Cursor = w.label(), rec.Cursor
	r.rt.emit(ev)
	return rec, true, nil
}

// takeGuidance hands a child the guidance accepted since its last provider
// step, in order.
func (r *registry) takeGuidance(w *work) []Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	msgs := w.inbox
	w.inbox = nil
	w.delivered += len(msgs)
	return msgs
}

// newRequest makes a request with the status block of the owner's Work
// sampled at now (no Status when the owner has none): one allocation for
// both when the block has one row, the usual case. A request without a
// status block takes room instead of an allocation when it is given one,
// and says so.
func (r *registry) newRequest(owner string, now time.Time, room *Request) (req *Request, usedRoom bool) {
	var one StatusRow
	rows, total, singleLine := r.statusRows(owner, now, &one)
	if total == 0 {
		if room != nil {
			return room, true
		}
		return &Request{}, false
	}
	rs := &struct {
		req    Request
		status StatusBlock
		row    [1]StatusRow
		text   [statusTextRoom]byte
	}{}
	if total == 1 {
		rs.row[0] = one
		rows = rs.row[:]
	}
	fillStatus(&rs.status, rows, total, rs.text[:], singleLine)
	rs.req.Status = &rs.status
	return &rs.req, false
}

// statusTextRoom is the room for a status block's text that a request
// with a block of one row is allocated with: the header and a row of a
// short id and label ("- w-12 · research · completed 4s · Result
// available" is 55 bytes, the block 72). With it the request takes 352
// bytes, a size class of the allocator's.
const statusTextRoom = 88

// statusRows samples the owner's attached Work for a status block: at
// most MaxStatusRows rows, unfinished Work first (oldest first), then
// finished Work (most recently finished first), and how many attached
// items there are in all. A block of one row, the usual case, is
// written to one, with no list of its own (rows nil, total 1); more are
// written to a list made to their number. singleLine says that every
// row's id and label is single-line already.
func (r *registry) statusRows(owner string, now time.Time, one *StatusRow) (rows []StatusRow, total int, singleLine bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ow := r.ownerLocked(owner)
	if ow == nil || ow.visible.n == 0 {
		return nil, 0, false
	}
	// Attached Work is open or finished: one row for each, up to the cap.
	if ow.visible.n == 1 {
		w := ow.open.head
		if w == nil {
			w = ow.finished.tail
		}
		*one, singleLine = r.statusRowLocked(w, now)
		return nil, 1, singleLine
	}
	rows, singleLine = make([]StatusRow, 0, min(ow.visible.n, MaxStatusRows)), true
	for w := ow.open.head; w != nil && len(rows) < MaxStatusRows; w = w.links[listOpen].next {
		rows = append(rows, StatusRow{})
		ok := false
		rows[len(rows)-1], ok = r.statusRowLocked(w, now)
		singleLine = singleLine && ok
	}
	for w := ow.finished.tail; w != nil && len(rows) < MaxStatusRows; w = w.links[listFinished].prev {
		rows = append(rows, StatusRow{})
		ok := false
		rows[len(rows)-1], ok = r.statusRowLocked(w, now)
		singleLine = singleLine && ok
	}
	return rows, ow.visible.n, singleLine
}

// statusRowLocked is the Work's status row at now, and whether its id and
// label are single-line already.
func (r *registry) statusRowLocked(w *work, now time.Time) (row StatusRow, singleLine bool) {
	// Elapsed time runs from the start (from creation only while queued)
	// to the end or now.
	start, end := w.created, now
	if !w.started.IsZero() {
		start = w.started
	}
	if w.state.Terminal() {
		end = w.finished
	}
	label, singleLine := w.label(), w.singleLine
	if r.rt.opts.Testing.Defects.LeakOutputInStatus && w.output != nil {
		label += " " + w.output.Raw // a planted defect
		singleLine = false
	}
	return StatusRow{
		ID: w.ref.ID, Label: label, State: w.state,
		Elapsed:         end.Sub(start),
		ResultAvailable: w.state == lifecycle.Completed,
	}, singleLine
}

func (r *registry) snapshot() []WorkInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]WorkInfo, 0, len(r.all))
	for _, w := range r.all {
		out = append(out, WorkInfo{Ref: w.ref, Owner: w.owner, Label: w.label(), Agent: w.isAgent, State: w.state,
			Detached: w.detached, Rejoined: w.rejoined, CreatedAt: w.created, StartedAt: w.started,
			FinishedAt: w.finished, Sent: w.sent, Delivered: w.delivered})
	}
	return out
}

// unfinished returns the done signals of every unfinished Work item.
func (r *registry) unfinished() []<-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []<-chan struct{}
	for _, w := range r.all {
		if !w.state.Terminal() {
			out = append(out, w.done.C())
		}
	}
	return out
}

// cancelStartedBy cancels the unfinished Work that one run of an owner
// started, attached or detached: the run was cancelled, so nothing it
// started may go on without it. Each cancelled child run does the same for
// its own Work when it stops, so the cancellation reaches the whole tree.
func (r *registry) cancelStartedBy(owner string, run uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ow := r.ownerLocked(owner)
	if ow == nil {
		return
	}
	for _, w := range ow.all {
		if w.startedBy == run && !w.state.Terminal() {
			r.cancelLocked(w)
		}
	}
}

// closeAll stops accepting Work, cancels every unfinished item and returns
// the signals to wait on.
func (r *registry) closeAll() []<-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	var pending []<-chan struct{}
	for _, w := range r.all {
		if w.state.Terminal() {
			continue
		}
		r.cancelLocked(w)
		if !w.state.Terminal() {
			pending = append(pending, w.done.C())
		}
	}
	return pending
}
