// Package core is crux-sim's runtime: agents, prompts, tools, providers, the
// agent loop, and the background Work contract of backgroundable children.
//
// # Agents and the loop
//
// An [Agent] has a [Prompt] (input schema, optional output schema, system
// text, prompt function), [Tools] and middleware ([Middleware], its "use").
// A [Runtime] runs it: each provider step sends one semantic [Request] to the
// [Provider] and gets one [Response]; tool calls are executed in order as a
// tool round and the loop goes on until a final output or the step budget.
// A tools map holds ordinary [*Tool]s, foreground child [*Agent]s (called
// inline; the tool result is the child's exact output) and
// [Backgroundable] children.
//
// # Background Work
//
// A Backgroundable child's tool gains an optional run_in_background flag.
// With the flag the call returns an immutable [WorkRef] at once and the
// child runs as Work, tracked in the runtime's process-local registry
// through the lifecycle of package lifecycle. An agent with a backgroundable
// child also gets the automatic "work" tool (list, status, result, cancel,
// detach, send), and before each of its provider requests a capped
// "Background work:" [StatusBlock] that carries only ids, labels, states,
// elapsed seconds and result availability. A child's output reaches the
// parent model only through an explicit result action.
//
// Work belongs to the agent instance that started it, outlives that
// instance's run, and lives until it finishes or the Runtime is closed;
// [Runtime.Close] cancels and drains it.
//
// # Determinism seams
//
// Everything nondeterministic enters through [Options]: the clock
// (clockwork.Clock), the [IDSource], the [Executor] that runs concurrent
// actors and is told of every semantic point, and the Provider. Production
// uses the real clock, random ids, goroutines and a real provider; the
// harness package swaps in a virtual clock, sequential ids, a seeded
// scheduler and the scripted provider.
//
// # Observing
//
// An [Observer] receives every [Event]: requests, responses, tool calls and
// results, Work transitions, sends and guidance. [NewLogObserver] is the
// redacted slog request log.
package core
