// Package scenarios describes runs of background agents and what must be
// true of them, in Go for Ginkgo specs and in YAML files for the CLI.
//
// A [Scenario] names the top-level agents and their input ([TopLevel]), what the
// model does at each step of each agent ([Script], turns of the scripted
// provider), what goes wrong ([Fault]) and what must hold ([Expectation]).
// It describes a run; package harness performs it, on virtual time under a
// seeded schedule, and returns a [Result] with the normalized semantic
// trace.
//
// # Platform scenarios
//
// A scenario with a [Platform] instead of top-level agents is a run of the
// platform's background jobs (platform): root sessions and their first
// messages, durable tasks and crons made at the start, a horizon of
// virtual time. The harness runs it on its simulator, restarting the
// process on the durable store after each crash fault. The platform's
// events are platform entries of the trace ([Pattern.Event]), and
// [TasksEnd], [ParentsFirst] and [FindingReported] read its final state
// ([PlatformResult]). [If] checks an expectation only in runs where a
// pattern matches, so that a fuzzed fault mix keeps it true.
//
// # Expectations are patterns over the trace
//
// A [Pattern] matches trace entries: a request that offered these tools and
// carried this status row, a response that called research with
// run_in_background, a work result for the Work research returned.
// Patterns never spell generated ids; a [Ref] names Work by the call that
// started it ([WorkOf]("research")). Expectations combine patterns
// ([InOrder], [InAnyOrder], [Subset], [Never], [Count]) or check the research
// coordinator recipe's rules directly ([OutputOnlyViaResult], [ForegroundOutput]), as well as
// end states ([WorkEnds], [AgentEnds], [PrepareFails]). They read only the
// trace, so they hold for scripted and recorded runs alike. A [Failure]
// says what is wrong and, with [Failure.Report], quotes the transcript
// around the entry at fault, naming the nearest miss.
//
// # Gomega matchers
//
// Every expectation is a Gomega matcher through [Meet], and the common ones
// have their own: [HaveSequence], [CallInBackground], [ReturnWorkRef],
// [HaveStatusRow], [CallWork], [DeliverOutputOnlyThroughResult],
// [ReturnChildOutputInline] and more. They take a harness Outcome, a
// *[Result], a *trace.Trace or anything with a SemanticTrace method, and
// return an error for anything else:
//
//	run := harness.Run(sc, harness.Options{Seed: 1})
//	Expect(run).To(scenarios.CallInBackground("research-coordinator", "research"))
//	Expect(run).To(scenarios.DeliverOutputOnlyThroughResult("research"))
//
// # Files
//
// [Load] and [LoadFile] read the YAML form, documented key by key in
// docs/scenarios.md ([FileKeys] lists the keys). Every problem is reported
// at once as a *[LoadError], each at its file, line and column, with a
// suggestion where one helps; testdata/bad holds a file for every kind of
// mistake and the exact message it gets. The built-in scenarios
// ([Builtins], [Builtin]) are YAML files embedded in the binary: the research
// coordinator recipe in its background and foreground forms, the lifecycle
// races, and the platform's background jobs (workers, delegation, durable tasks
// under a crash, loops over a week).
package scenarios
