package harness

import "github.com/crux-sim/crux-sim/core/trace"

// WithPlant returns opts with a planter: after every entry recorded from a
// runtime event, plant's entries are recorded too. Only tests plant.
func WithPlant(opts Options, plant func(e trace.Entry) []trace.Entry) Options {
	opts.plant = plant
	return opts
}
