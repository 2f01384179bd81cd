package harness

import (
	"time"
	"unsafe"

	"github.com/crux-sim/crux-sim/core/trace"
	"github.com/crux-sim/crux-sim/platform"
	"github.com/crux-sim/crux-sim/platform/store"
)

// WithTraceDefect returns opts with a defect planted in the trace: after
// every entry recorded from a runtime event, defect's entries are recorded
// too. Only tests plant defects.
func WithTraceDefect(opts Options, defect func(e trace.Entry) []trace.Entry) Options {
	opts.traceDefect = defect
	return opts
}

// WithPlatformDefect returns opts with a defect planted in a platform run's
// events: after every event, defect's events are recorded too.
func WithPlatformDefect(opts Options, defect func(e platform.Event) []platform.Event) Options {
	opts.platformDefect = defect
	return opts
}

// WithHorizonHook returns opts whose platform run calls hook on its durable
// store at the horizon, before the harness checks that no task was lost.
func WithHorizonHook(opts Options, hook func(s store.Store, now time.Time)) Options {
	opts.atHorizon = hook
	return opts
}

// WithLogContent returns opts with the runtime logging child content: a
// leak that Options.CheckLogs must catch. Only tests leak.
func WithLogContent(opts Options) Options {
	opts.logContent = true
	return opts
}

// Room is a campaign job's room (see room), for the specs and benchmarks
// of a job's loop: Options hands it to Run, and Drop gives back the run
// it made last, once the caller knows its outcome is dropped.
type Room struct{ r *room }

// NewRoom returns an empty room.
func NewRoom() *Room { return &Room{r: &room{}} }

// Options returns opts with the room.
func (m *Room) Options(opts Options) Options {
	opts.room = m.r
	return opts
}

// Drop gives back the run of o, when Run made it last in the room.
func (m *Room) Drop(o *Outcome) { m.r.drop(o) }

// RunSize is the size of a run's state, which Run allocates for each run
// outside a campaign's room.
const RunSize = unsafe.Sizeof(run{})

// RequestedWait is requestedWait, for its spec.
var RequestedWait = requestedWait
