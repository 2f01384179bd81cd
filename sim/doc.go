// Package sim is crux-sim's one deterministic simulator: a seeded,
// one-actor-at-a-time scheduler and a virtual clock that jumps. The
// harness runs every scenario on it; the platform's specs run on it; and
// so can your own Go code, without a scenario.
//
// # Actors
//
// A [Sim] is a core.Executor: [Sim.Go] registers an actor (a function that
// runs as a coroutine), and only the actor the scheduler resumed runs. It
// runs until it parks, at a semantic point ([Sim.Yield]) or on a wait
// ([Sim.Wait], or [Clock.Sleep]), and hands control straight back. So code
// that starts its goroutines through a core.Executor and waits through
// Executor.Wait (the runtime in core, the platform) runs under the
// simulator unchanged, one step at a time.
//
// # Choice
//
// Which runnable actor goes next is drawn from the seed's scheduling
// stream ([Options.Seed]); every choice is recorded ([Sim.Decisions]) and
// can be dictated ([Options.Replay]), which is how a failing schedule is
// replayed and shrunk. [Options.ReplayStrict] with no Replay is a fixed
// schedule that needs no seed: the first runnable actor always goes. The
// harness derives its other random streams (faults, latency) from the same
// seed with [NewRand], each under its own constant, so a change in one
// does not shift the others.
//
// # Waking
//
// A step does not visit the actors that wait: the scheduler keeps a queue
// of the runnable ones, and is a core.SignalWatcher ([Sim.Watch]), told by
// the runtime when a signal it made with core.NewSignal, core.SignalAfter
// or core.WithCancel closes; that puts the actors waiting on it in the
// queue. An actor waiting on a channel nobody said they will close is
// polled on every step instead, so such a channel works too, at the old
// cost.
//
// # Time
//
// The [Clock] is a clockwork.Clock that never moves on its own: when no
// actor can run, it jumps to the earliest pending deadline and fires the
// timers due then, in the order they were registered. A 30-second wait or a
// week of hourly timers costs no wall-clock time. A timer whose callback
// mostly only re-arms it (a poller finding nothing to do) can tell the
// clock that idle round ahead of time (the timer AfterFunc returns has a
// method SkipIdle(func(at time.Duration) (reset time.Duration, idle bool)),
// which a caller reaches by asserting that interface): the clock then runs
// it without the callback and without
// stopping at its instant, and every timer still fires at the same time and
// in the same order. A poller whose idle rounds come in runs says so with
// SkipIdleSpan(func(at time.Duration) (reset, until time.Duration, idle bool)):
// the clock then runs the rounds due before until without asking, one
// integer step each, and asks again at the last one it runs. The clock starts at
// [Epoch] (or [Options.Start]), so a trace's timestamps are the same on
// every run.
//
// # Driving
//
//   - [Sim.Run] runs until every actor has finished. When actors are left
//     that can never run (none is runnable and no timer is pending) it
//     returns a [*DeadlockError] that says what each one waits on.
//   - [Sim.RunFor] runs up to a horizon of virtual time and leaves the
//     clock there; timers past it stay pending and waiting actors stay
//     parked. [Sim.Settle] is RunFor(0); [Sim.Step] does one thing.
//   - [Sim.Wait] called from outside any actor (a test, your main, a
//     Close that waits for actors to end) drives the scheduler itself
//     until one of its signals closes, and panics with the deadlock when
//     none ever can. A timer callback must not block: it runs while the
//     simulator is being driven, and a Wait there panics.
//   - [Sim.Kill] ends every actor where it stands, as a process crash
//     would; no goroutine is left behind. A panic in an actor ends the
//     others and reaches the driver as an [*ActorPanic].
//
// # Coroutines
//
// A Sim makes a coroutine (a goroutine, whose stack grows to an agent
// run's depth) per actor alive at once, and ends the idle ones when the
// call that drives it returns. A campaign that runs Sim after Sim gives
// each a [Pool] ([Options.Pool]) instead: the coroutines, with their
// grown stacks, serve run after run, and end when the pool is closed.
//
// The package knows only core's seams (Executor, SignalWatcher, Point) and clockwork; it
// knows nothing of scenarios, scripts or the platform.
package sim
