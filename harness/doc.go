// Package harness runs scenarios under full control: one actor at a time,
// on virtual time, with faults, invariants and a seed that decides
// everything a run leaves open.
//
// # Simulating
//
// [Run] performs a scenario under [Options] and returns an [Outcome]: the
// normalized semantic trace, one verdict per expectation, invariant
// violations, the schedule and what a crash lost.
//
//	o := harness.Run(sc, harness.Options{Seed: 7})
//	if !o.Passed() { harness.WriteReport(os.Stdout, o) }
//
// Underneath is a [sim.Sim], the core.Executor of the simulated runtime. Each
// actor (the top-level runs, every background child, every fault) is a
// coroutine; the actor the scheduler resumes runs until it parks at a
// semantic point (provider step, tool call, Work transition) or a wait
// (clock, inbox, Work), and hands control back. The seed's scheduling
// stream picks the next runnable actor. When none can run, the [sim.Clock]
// jumps to the earliest timer and fires the timers due then in the order
// they were registered; when none can run and no timer is pending, the
// run is a deadlock, and the [sim.DeadlockError] says what each actor waits
// on. The simulator is its own package, sim, so that a user's Go code (or
// the platform's specs) can run under virtual time without a scenario.
//
// # Seeds and streams
//
// One seed feeds independent streams (scheduling, faults, latency), each
// with its own constant ([sim.NewRand]), so that a change in how faults are
// drawn does not shift a single scheduling choice. The same scenario and
// seed give a byte-identical transcript, JSON trace and schedule on every
// run; [CheckDeterminism] checks that promise, and crux-sim run
// --check-determinism applies it from the command line.
//
// # Faults
//
// A scenario's faults: a provider error or added latency on a step of an
// agent (a provider error in a child is a child failure), a cancel, send,
// detach, status or result issued on the owner's behalf at a point given by
// a pattern and a drawn jitter, and a crash. A crash drops all
// process-local state: every actor is killed where it stands, nothing it
// does while unwinding is recorded, and the trace ends with what was lost
// (the actors and what they waited on, the unfinished Work).
//
// # Invariants
//
// [DefaultInvariants] are checked after every scheduling step against the
// entries recorded since the previous one; a [Violation] carries the seed,
// the step and the entry that broke it. An [Invariant] may also check a
// platform run's events, and once, when the run ends, what is left
// ([Invariant.End]): that is how no-lost-task asks the live platform
// process whether any task is lost.
//
// # Speed
//
// A run of a built-in scenario takes tens of microseconds; see
// BenchmarkRunResearchCoordinator and BenchmarkRunCancelVsComplete, and
// docs/simulator.md for figures.
package harness
