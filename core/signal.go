package core

import (
	"context"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
)

// SignalWatcher is an Executor that wants to hear when a signal closes. The
// simulator is one: told of each signal as it is closed, it wakes exactly
// the actors waiting on that signal instead of polling every waiting actor
// on every step. The runtime tells a SignalWatcher of every signal it
// closes itself (Work ends, timers, the cancellation of the contexts it
// makes), through NewSignal and WithCancel; a signal it was not told of
// (a tool's own channel, a context the caller made) still works, since
// such an executor must keep polling the actors waiting on one.
type SignalWatcher interface {
	Executor
	// Watch is told of a channel that the caller will close.
	Watch(signal <-chan struct{})
	// Closed is told, right after the caller closed it, that a channel
	// it was told of by Watch has closed.
	Closed(signal <-chan struct{})
}

// Signal is a channel that is closed once, by Close, and whose closing the
// executor it was made for hears of when it is a SignalWatcher. Wait on C.
type Signal struct {
	c chan struct{}
	w SignalWatcher
}

// NewSignal returns an open Signal made for exec.
func NewSignal(exec Executor) Signal {
	s := Signal{c: make(chan struct{})}
	if w, ok := exec.(SignalWatcher); ok {
		s.w = w
		w.Watch(s.c)
	}
	return s
}

// C returns the channel to wait on.
func (s Signal) C() <-chan struct{} { return s.c }

// Close closes the channel (once: a second Close panics, as close does)
// and tells the executor.
func (s Signal) Close() {
	close(s.c)
	if s.w != nil {
		s.w.Closed(s.c)
	}
}

// SignalAfter returns a signal that clock closes after d, made for exec as
// NewSignal's are, and the timer that closes it (Stop it when the wait
// ends otherwise).
func SignalAfter(exec Executor, clock clockwork.Clock, d time.Duration) (<-chan struct{}, clockwork.Timer) {
	s := NewSignal(exec)
	return s.C(), clock.AfterFunc(d, s.Close)
}

// cancelScope is a context WithCancel made, whose Done channel the
// executor watches: the closing of that channel, whether by the context's
// own cancel or by an ancestor's, reaches the executor through it. It is
// the context itself (one allocation for both), and finds itself as the
// value of cancelScopeKey.
type cancelScope struct {
	context.Context
	w      SignalWatcher
	cancel context.CancelCauseFunc

	mu       sync.Mutex
	over     bool
	parent   *cancelScope
	index    int // in parent.children
	children []*cancelScope
}

type cancelScopeKey struct{}

func (sc *cancelScope) Value(key any) any {
	if key == (cancelScopeKey{}) {
		return sc
	}
	return sc.Context.Value(key)
}

// WithCancel is context.WithCancelCause for a context whose cancellation
// the executor hears of when it is a SignalWatcher: its cancel, or the
// cancel of an ancestor WithCancel made, tells the executor that the
// context's Done channel closed. Below a context the executor cannot follow
// (an ancestor canceled some other way), it is plain
// context.WithCancelCause, and the executor polls whoever waits on it.
func WithCancel(exec Executor, parent context.Context) (context.Context, context.CancelCauseFunc) {
	ctx, c := withCancel(exec, parent, nil)
	if c.scope != nil {
		return ctx, c.scope.cancelCause
	}
	return ctx, c.fn
}

// canceller cancels a context withCancel made: through its scope when
// the executor watches it, else through context's cancel function. The
// runtime keeps one for each context it makes (a Work item's)
// rather than WithCancel's function, which costs an allocation of its own.
type canceller struct {
	scope *cancelScope
	fn    context.CancelCauseFunc
}

func (c canceller) cancel(cause error) {
	if c.scope != nil {
		c.scope.cancelCause(cause)
		return
	}
	c.fn(cause)
}

// withCancel is WithCancel, with the context's canceller. room, when set,
// is where its scope is made (a Work item's, allocated with it), rather
// than an allocation of its own; it must be used for no other context.
func withCancel(exec Executor, parent context.Context, room *cancelScope) (context.Context, canceller) {
	ctx, cancel := context.WithCancelCause(parent)
	w, ok := exec.(SignalWatcher)
	if !ok {
		return ctx, canceller{fn: cancel}
	}
	var up *cancelScope
	if pd := parent.Done(); pd != nil {
		// The parent's Done closes when some ancestor is canceled: only
		// a scope of WithCancel's own that owns that very channel tells
		// of it.
		up, _ = parent.Value(cancelScopeKey{}).(*cancelScope)
		if up == nil || up.Done() != pd {
			return ctx, canceller{fn: cancel}
		}
	}
	sc := room
	if sc == nil {
		sc = new(cancelScope)
	}
	*sc = cancelScope{Context: ctx, w: w, cancel: cancel, parent: up}
	w.Watch(ctx.Done())
	if up != nil && !up.adopt(sc) {
		sc.end() // the parent has already ended, and so has ctx
	}
	return sc, canceller{scope: sc}
}

func (sc *cancelScope) cancelCause(cause error) {
	sc.cancel(cause)
	sc.end()
}

// adopt records a child scope, unless the scope has ended.
func (sc *cancelScope) adopt(child *cancelScope) bool {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.over {
		return false
	}
	child.index = len(sc.children)
	sc.children = append(sc.children, child)
	return true
}

// end tells the executor that the scope's context (its Done channel closed
// already) and every descendant's ended. It runs once per scope.
func (sc *cancelScope) end() {
	sc.mu.Lock()
	if sc.over {
		sc.mu.Unlock()
		return
	}
	sc.over = true
	children := sc.children
	sc.children = nil
	sc.mu.Unlock()
	if up := sc.parent; up != nil {
		up.mu.Lock()
		if i := sc.index; i < len(up.children) && up.children[i] == sc {
			last := len(up.children) - 1
			up.children[i] = up.children[last]
			up.children[i].index = i
			up.children[last] = nil
			up.children = up.children[:last]
		}
		up.mu.Unlock()
	}
	sc.w.Closed(sc.Done())
	for _, c := range children {
		c.end()
	}
}
