package sim

import "time"

// Hooks are told of a simulation's steps and clock jumps (Options.Hooks):
// Step after every step, with the actor that ran (valid only during the
// call, and not to be written to), Jump when virtual time jumps.
type Hooks interface {
	Step(a *Actor)
	Jump(from, to time.Time)
}

// hooksOf is what a Sim made with opts calls back, and whether it is to
// be told of steps and of jumps. A single OnStep or OnJump is called as it
// is (a func in an interface takes no allocation); OnStep and OnJump
// together, or with Hooks, are called in turn through funcHooks.
func hooksOf(opts Options) (h Hooks, steps, jumps bool) {
	switch {
	case opts.OnStep == nil && opts.OnJump == nil:
		return opts.Hooks, opts.Hooks != nil, opts.Hooks != nil
	case opts.Hooks == nil && opts.OnJump == nil:
		return stepHook(opts.OnStep), true, false
	case opts.Hooks == nil && opts.OnStep == nil:
		return jumpHook(opts.OnJump), false, true
	}
	return &funcHooks{step: opts.OnStep, jump: opts.OnJump, then: opts.Hooks}, true, true
}

// stepHook is an OnStep alone; it is never told of a jump.
type stepHook func(a *Actor)

func (f stepHook) Step(a *Actor)         { f(a) }
func (stepHook) Jump(from, to time.Time) {}

// jumpHook is an OnJump alone; it is never told of a step.
type jumpHook func(from, to time.Time)

func (jumpHook) Step(a *Actor)             {}
func (f jumpHook) Jump(from, to time.Time) { f(from, to) }

// funcHooks calls OnStep and OnJump, whichever is set, then Hooks, if set.
type funcHooks struct {
	step func(a *Actor)
	jump func(from, to time.Time)
	then Hooks
}

func (h *funcHooks) Step(a *Actor) {
	if h.step != nil {
		h.step(a)
	}
	if h.then != nil {
		h.then.Step(a)
	}
}

func (h *funcHooks) Jump(from, to time.Time) {
	if h.jump != nil {
		h.jump(from, to)
	}
	if h.then != nil {
		h.then.Jump(from, to)
	}
}
