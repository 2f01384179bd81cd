package harness

import (
	"time"

	"github.com/crux-sim/crux-sim/core/trace"
	"github.com/crux-sim/crux-sim/platform"
	"github.com/crux-sim/crux-sim/platform/store"
)

// WithPlant returns opts with a planter: after every entry recorded from a
// runtime event, plant's entries are recorded too. Only tests plant.
func WithPlant(opts Options, plant func(e trace.Entry) []trace.Entry) Options {
	opts.plant = plant
	return opts
}

// WithPlatformPlant returns opts with a planter of platform events: after
// every event of a platform run, plant's events are recorded too.
func WithPlatformPlant(opts Options, plant func(e platform.Event) []platform.Event) Options {
	opts.plantPlatform = plant
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
