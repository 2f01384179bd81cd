package platform

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/robfig/cron/v3"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/internal/keys"
	"github.com/crux-sim/crux-sim/internal/slab"
	"github.com/crux-sim/crux-sim/platform/store"
)

// ID kinds the platform draws from core.IDSource.
const (
	IDSession  core.IDKind = "session"
	IDTask     core.IDKind = "task"
	IDSchedule core.IDKind = "schedule"
	IDArtifact core.IDKind = "artifact"
	IDInbox    core.IDKind = "inbox"
	IDNote     core.IDKind = "note"
	IDInstance core.IDKind = "instance"
)

// Semantic points at which the platform yields to the executor, numbered
// clear of core's own point kinds.
const (
	// PointSessionTurn: a session turn is about to run (Run is the session
	// id, Step the turn number).
	PointSessionTurn core.PointKind = 64 + iota
	// PointTaskClaim: the dispatcher is about to claim a ready task.
	PointTaskClaim
)

// Errors callers branch on.
var (
	ErrClosed         = errors.New("platform closed")
	ErrUnknownSession = errors.New("unknown session")
	ErrUnknownAgent   = errors.New("unknown agent")
	ErrToolCollision  = errors.New("an agent's own tool and a platform tool offered to one session have the same name")
)

var (
	errCrashed     = errors.New("process crashed")
	errClosing     = errors.New("platform closing")
	errStopped     = errors.New("stopped by stop_worker")
	errTaskTimeout = errors.New("task attempt timed out")
	errTaskCancel  = errors.New("task cancelled")
	errDelegation  = errors.New("delegation ended")
)

// Platform runs the platform's sessions: workers, delegation, durable tasks,
// schedules and loops, and the maintenance sweepers, on one core.Runtime.
// It is safe for concurrent use.
type Platform struct {
	opts     Options
	rt       *core.Runtime
	clock    clockwork.Clock
	ids      core.IDSource
	exec     core.Executor
	store    store.Store
	instance string

	base     context.Context
	stopBase context.CancelCauseFunc

	// fence orders durable writes against a crash: writers hold it shared
	// and check crashed; Crash takes it exclusively.
	fence   sync.RWMutex
	crashed bool

	mu      sync.Mutex
	closing bool
	seq     uint64
	outbox  []queued // events for the observer, as kept in records
	spare   []queued // the outbox's other buffer (see unlock)
	// reads are the events for an observer that is an EventReader (and
	// the outbox is not used), as they were emitted, handed to it where
	// they stand; readSpare is their other buffer.
	reads, readSpare []Event
	flushing         bool
	// observeFunc is the observer when it is an ObserverFunc, called
	// directly: its Observe would copy each event once more; reader is
	// the observer when it is an EventReader.
	observeFunc ObserverFunc
	reader      EventReader
	sessions    sessionTable[*session]
	order       []*session
	// records holds every event of every log below, in chunks that never
	// move, so that a log is a list of pointers: an event is stored once
	// and a log that grows copies 8 bytes per event, not the whole record;
	// texts holds the records' set text fields (see record).
	records slab.Slab[record]
	texts   slab.Slab[string]
	names   slab.Texts // the sessions' actor names
	platLog eventLog
	parked  map[string]eventLog // events for sessions not live here, as this process sent them
	// sent are the mails this process posted to each session not live
	// here (their store numbers), boxes the sessions here whose mail it
	// takes at its task polls, and ended those of them that will never run
	// again, whose mailboxes inbox expiry closes (see mail.go).
	sent     map[string][]sentMail
	boxes    []*session
	ended    []*session
	tenants  map[string]string // the tenant of each root that has one (SessionOptions.Tenant)
	variants map[variantKey]*core.Agent
	quick    map[quickKey]*core.Agent
	// lastQuick are the two variants last found in quick, and their keys,
	// the latest first.
	lastQuick [2]quickFound
	actors    int         // actors started and not yet ended
	drained   core.Signal // closed when closing and the last actor ended
	slotSeq   uint64      // orders the timer slots (begin stops them in order)
	timers    map[*timerSlot]struct{}

	delegations  map[string]*delegation // by child session id
	findings     []Finding
	stranded     map[string]StrandedReason // task id → why it was reported stranded
	posts        []Post
	board        map[string]*board // by root
	boards       []*board          // the boards in the order of their roots (SweepBoard's)
	inbox        []*InboxItem
	pendingInbox int
	artifacts    map[string][]Artifact // by session

	dispatching, dispatchAgain bool
	runningTasks               map[string]*session // task id → attempt session
	reapSlot, pollSlot         *timerSlot
	crons                      map[string]cron.Schedule
	leading                    bool // this process held the leader lease at its last pass
	announced                  bool // scheduler.leader was emitted since it took the lease
	ticker                     ticker
	lastWait                   struct { // waitTextLocked's last delay and its text; parseDelay's last delay and its value
		d      time.Duration
		text   string
		delay  string
		parsed time.Duration
	}

	tools map[string]*core.Tool
}

// ticker is the scheduled-work ticker's state (see startScheduler). Its
// deadlines are nanoseconds since the platform started (ticker.now), as
// the simulator's clock keeps its own, so that an idle poll compares and
// adds integers and makes no time.Time.
type ticker struct {
	slot *timerSlot
	// t0 is when the platform started; clock is the platform's clock when
	// it counts its own time (the simulator's does), and e0 its count at
	// t0; wall is the clock otherwise.
	t0    time.Time
	clock interface{ Elapsed() time.Duration }
	e0    time.Duration
	wall  clockwork.Clock

	at           int64 // when the timer is armed for, while armed
	armed        bool
	notBefore    int64
	nextRecovery int64 // set with setNextRecovery
	poll         int64 // Options.SchedulePollInterval
	// limit is the earlier of nextRecovery and the next due row as last
	// read (due, when dueOK): the first instant at which a wake-up is not
	// idle for what the ticker knows, and the latest it is armed for.
	limit int64

	// The store's next due row as last read (due, when dueOK), and the
	// store's count of schedule writes then (a store.ScheduleWriteCounter
	// counts them; writes is nil for a store that does not): NextDue is
	// asked again only after a write.
	writes  store.ScheduleWriteCounter
	mem     *store.Memory // the store, when it is the in-memory one (see scheduleWrites)
	seen    uint64
	due     int64
	dueOK   bool
	dueRead bool
	// quietAt is the count of schedule writes at which the simulator's
	// idle round finds nothing to do without a call (see setQuiet).
	quietAt uint64

	// dueRoom is the room a pass reads the due rows into (dueRows), while
	// dueBusy says a pass has it.
	dueRoom []store.Schedule
	dueBusy bool
}

// New makes a Platform and starts its dispatcher, scheduled-work ticker and
// sweepers. A platform made on the store of a crashed one picks up its
// tasks and schedules.
func New(opts Options) (*Platform, error) {
	if opts.Core.Provider == nil {
		return nil, errors.New("platform: Options.Core.Provider is required")
	}
	opts.defaults()
	if opts.Core.Clock == nil {
		opts.Core.Clock = clockwork.NewRealClock()
	}
	if opts.Core.IDs == nil {
		opts.Core.IDs = core.RandomIDs{}
	}
	if opts.Core.Executor == nil {
		opts.Core.Executor = core.GoExecutor{}
	}
	p := &Platform{
		opts:         opts,
		clock:        opts.Core.Clock,
		ids:          opts.Core.IDs,
		exec:         opts.Core.Executor,
		store:        opts.Store,
		instance:     opts.Instance,
		parked:       map[string]eventLog{},
		records:      slab.Sized[record](8, 128), // a platform with a few events pays for a few
		texts:        slab.Sized[string](16, 512),
		names:        slab.SizedTexts(1<<10, 1<<10),
		variants:     map[variantKey]*core.Agent{},
		quick:        map[quickKey]*core.Agent{},
		drained:      core.NewSignal(opts.Core.Executor),
		timers:       map[*timerSlot]struct{}{},
		delegations:  map[string]*delegation{},
		board:        map[string]*board{},
		artifacts:    map[string][]Artifact{},
		stranded:     map[string]StrandedReason{},
		runningTasks: map[string]*session{},
		crons:        map[string]cron.Schedule{},
	}
	p.observeFunc, _ = opts.Observer.(ObserverFunc)
	p.reader, _ = opts.Observer.(EventReader)
	// The runtime's provider records the sessions' provider steps
	// (activityProvider) and is otherwise the one given.
	rtOpts := opts.Core
	rtOpts.Provider = &activityProvider{p: p, next: opts.Core.Provider}
	p.rt = core.New(rtOpts)
	if p.instance == "" {
		p.instance = p.ids.NewID(IDInstance)
	}
	p.base, p.stopBase = core.WithCancel(p.exec, context.Background())
	p.tools = platformTools()
	for _, name := range keys.Sorted(opts.Agents) {
		if a := opts.Agents[name]; a == nil {
			return nil, fmt.Errorf("platform: agent %q is nil", name)
		}
	}
	p.startTasks()
	p.startScheduler()
	if !opts.NoSweepers {
		p.startSweepers()
	}
	return p, nil
}

// Runtime returns the core runtime the sessions run on.
func (p *Platform) Runtime() *core.Runtime { return p.rt }

// Store returns the durable store.
func (p *Platform) Store() store.Store { return p.store }

// Instance returns this process's claim identity.
func (p *Platform) Instance() string { return p.instance }

// Close stops the timers, interrupts every turn and waits until every actor
// has ended, then closes the runtime. Unlike Crash it is orderly, but it
// writes nothing either: the dispatcher claims no task once Close began,
// and a task attempt interrupted by Close (or claimed as it began) is left
// to be reaped like a crashed one, because the process is going away.
//
// Close waits through the executor, so it may be called from an actor or,
// under a simulator, from its driver (whose wait runs the simulation).
func (p *Platform) Close() error {
	p.exec.Wait("platform close", p.begin(errClosing))
	return p.rt.Close()
}

// Crash simulates a process crash: every process-local thing (sessions,
// event logs, the board, the inbox, running turns, timers) is dropped and no
// further durable write is made; the store keeps what it had. Make a new
// Platform on the same store to restart. Crash waits for the dropped
// actors to end, so that nothing leaks from a test; see Close on waiting.
func (p *Platform) Crash() {
	p.fence.Lock()
	p.crashed = true
	p.fence.Unlock()
	p.exec.Wait("platform crash", p.begin(errCrashed))
	_ = p.rt.Close()
}

// Root is a root session to reopen after a restart: its id and how it was
// opened.
type Root struct {
	ID      string
	Options SessionOptions
}

// Restart is a crash followed by a new process on the durable store: p
// crashes (Crash: every process-local thing is lost), a new Platform is
// made from opts on p's store (opts.Store is ignored), and the given root
// sessions are reopened under their ids (RestoreSession), so that their
// tasks' ownership checks and the events addressed to them (parked here, or
// in their mailboxes in the store) find them. It returns the new
// process and the ids of the roots it reopened; a root that cannot be
// reopened (its agent is unknown to opts) is left out.
func (p *Platform) Restart(opts Options, roots []Root) (*Platform, []string, error) {
	p.Crash()
	opts.Store = p.store
	next, err := New(opts)
	if err != nil {
		return nil, nil, fmt.Errorf("platform: restart: %w", err)
	}
	restored := make([]string, 0, len(roots))
	for _, r := range roots {
		if next.RestoreSession(r.ID, r.Options) == nil {
			restored = append(restored, r.ID)
		}
	}
	return next, restored, nil
}

// begin stops the timers and cancels every turn with cause, and returns
// the drained channel.
func (p *Platform) begin(cause error) <-chan struct{} {
	p.mu.Lock()
	if p.closing {
		p.mu.Unlock()
		return p.drained.C()
	}
	p.closing = true
	p.ticker.setQuiet(true)
	for _, t := range sortedSlots(p.timers) {
		t.stop()
	}
	clear(p.timers)
	if p.actors == 0 {
		p.drained.Close()
	}
	p.mu.Unlock()
	p.stopBase(cause)
	return p.drained.C()
}

// durable runs a store write unless the process has crashed.
func (p *Platform) durable(fn func() error) error {
	p.fence.RLock()
	defer p.fence.RUnlock()
	if p.crashed {
		return errCrashed
	}
	return fn()
}

// goLocked starts a tracked actor running fn. It refuses once the
// platform is closing.
func (p *Platform) goLocked(name string, fn func()) bool {
	return p.startLocked(name, p.actor(fn))
}

// actor is the body of a tracked actor that runs fn: it ends by telling
// the platform (actorEnded). A job that runs as an actor again and again
// (the ticker's pass, a sweep, a session's turns) makes its body once and
// starts it with startLocked, so that a start allocates nothing of the
// platform's.
func (p *Platform) actor(fn func()) func() {
	return func() {
		defer p.actorEnded()
		fn()
	}
}

// startLocked starts a tracked actor whose body p.actor made. It refuses
// once the platform is closing.
func (p *Platform) startLocked(name string, body func()) bool {
	if p.closing {
		return false
	}
	p.actors++
	p.exec.Go(name, body)
	return true
}

// actorEnded is the last thing a tracked actor does; the last one to end
// after Close or Crash began drains the platform.
func (p *Platform) actorEnded() {
	p.mu.Lock()
	p.actors--
	if p.closing && p.actors == 0 {
		p.drained.Close()
	}
	p.mu.Unlock()
}

// skipIdle tells the simulator's clock, when t is one of its timers, the
// idle round of t's callback: what the callback does when it only re-arms
// t, as a function of the deadline it fires at, returning the duration of
// its Reset, and until when (the clock's time, as the deadline) the rounds
// after it at that cadence are idle too while nothing but the clock's
// skipping runs (an until at or before the deadline promises nothing).
// The simulator then runs such rounds without the callback and without
// stopping the clock at them, and those of a span without asking (sim's
// SkipIdle and SkipIdleSpan say why the order of fires stays the same).
// On another clock it does nothing.
func skipIdle(t clockwork.Timer, idle func(due time.Duration) (reset, until time.Duration, idle bool)) {
	if s, ok := t.(interface {
		SkipIdleSpan(func(time.Duration) (time.Duration, time.Duration, bool))
	}); ok {
		s.SkipIdleSpan(idle)
	}
}

// timerSlot is a clock timer the platform owns; Close stops it.
type timerSlot struct {
	t   clockwork.Timer
	seq uint64
}

func (s *timerSlot) stop() {
	if s != nil && s.t != nil {
		s.t.Stop()
	}
}

// afterLocked arms a timer whose callback starts an actor running fn. The
// callback itself never blocks: it only starts the actor.
func (p *Platform) afterLocked(d time.Duration, name string, fn func()) *timerSlot {
	if p.closing {
		return nil
	}
	p.slotSeq++
	slot := &timerSlot{seq: p.slotSeq}
	p.timers[slot] = struct{}{}
	slot.t = p.clock.AfterFunc(d, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if _, live := p.timers[slot]; !live {
			return
		}
		delete(p.timers, slot)
		p.goLocked(name, fn)
	})
	return slot
}

func (p *Platform) cancelSlotLocked(s *timerSlot) {
	if s == nil {
		return
	}
	delete(p.timers, s)
	s.stop()
}

func sortedSlots(m map[*timerSlot]struct{}) []*timerSlot {
	out := make([]*timerSlot, 0, len(m))
	for s := range m {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b *timerSlot) int { return cmp.Compare(a.seq, b.seq) })
	return out
}

// ---- events ----

// emitLocked appends an event to its session's log (the platform log when
// Session is empty) and queues it for the observer. The event is the
// caller's, read and not kept: it is passed by its address, not copied
// on the way to its record.
func (p *Platform) emitLocked(e *Event) {
	if e.Session != "" {
		if s := p.sessions.get(e.Session); s != nil {
			p.emitOnLocked(s, e)
			return
		}
	}
	kept := p.keepLocked(e)
	if e.Session == "" {
		p.platLog = append(p.platLog, kept)
	} else {
		p.parked[e.Session] = append(p.parked[e.Session], kept)
		p.postEventLocked(e)
	}
}

// emitOnLocked is emitLocked for an event on the log of s, which the
// caller has at hand: a live session's (addLocked made it one) is not
// looked up by its id.
func (p *Platform) emitOnLocked(s *session, e *Event) {
	e.Session = s.id
	if !s.added {
		p.emitLocked(e)
		return
	}
	s.log = append(s.log, p.keepLocked(e))
}

// unlock releases p.mu and then hands queued events to the observer, so
// that no lock is held across an observer callback. One actor at a time
// flushes, draining the queue until it is empty, so the observer sees
// events in sequence order even when actors run in parallel.
func (p *Platform) unlock() {
	if p.opts.Observer == nil || len(p.outbox) == 0 && len(p.reads) == 0 || p.flushing {
		p.mu.Unlock()
		return
	}
	p.flushing = true
	for len(p.reads) > 0 {
		// An EventReader is handed each event where it stands in the
		// buffer, which it keeps no pointer into.
		out := p.reads
		p.reads, p.readSpare = p.readSpare[:0], nil
		p.mu.Unlock()
		for i := range out {
			p.reader.ReadEvent(&out[i])
		}
		p.mu.Lock()
		// Not cleared: what an event holds (its strings, metadata and
		// parents, its time's location) its record holds too, on a log
		// the platform keeps as long as it keeps the buffer.
		p.readSpare = out[:0]
	}
	for len(p.outbox) > 0 {
		// Swap the queue with the spare one, so that flushing allocates
		// nothing once both have grown to what a turn emits.
		out := p.outbox
		p.outbox, p.spare = p.spare[:0], nil
		p.mu.Unlock()
		for _, q := range out {
			// Filled where it is handed on from: an Event returned
			// would be copied once more on its way to the call.
			var e Event
			q.r.fill(&e, q.session)
			if p.observeFunc != nil {
				p.observeFunc(e)
			} else {
				p.opts.Observer.Observe(e)
			}
		}
		p.mu.Lock()
		clear(out)
		p.spare = out[:0]
	}
	p.flushing = false
	p.mu.Unlock()
}

// Events returns a session's event log; the empty id is the platform log.
func (p *Platform) Events(session string) []Event {
	p.mu.Lock()
	defer p.mu.Unlock()
	if session == "" {
		return p.platLog.events(nil, "")
	}
	if s := p.sessions.get(session); s != nil {
		return s.log.events(nil, s.id)
	}
	return p.parked[session].events(nil, session)
}

// AllEvents returns every event of every live session and the platform
// log, in order.
func (p *Platform) AllEvents() []Event {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.platLog.events(nil, "")
	for _, s := range p.order {
		out = s.log.events(out, s.id)
	}
	for _, id := range keys.Sorted(p.parked) {
		out = p.parked[id].events(out, id)
	}
	slices.SortFunc(out, func(a, b Event) int { return cmp.Compare(a.Seq, b.Seq) })
	return out
}

// ctx is the context of store calls. It is not the platform's base
// context: a read through the public API must work after Close, and a crash
// is fenced by Platform.durable, not by cancelling writes half-way.
func (p *Platform) ctx() context.Context { return context.Background() }
