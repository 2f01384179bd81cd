// Package cassette records a session against a real provider once and
// replays it offline, in lockstep, as often as you like: in CI, without a
// network or an API key, learning exactly where the code under test left
// the recording.
//
// # Recording
//
// A [Recorder] is a core.Provider that wraps another (typically the OpenAI
// adapter of package core/openai) and writes every exchange as it
// finishes:
//
//	rec, err := cassette.CreateFile("testdata/leaves.cassette", real, cassette.RecordOptions{
//		Header:  cassette.Header{Scenario: "research-coordinator", Model: "gpt-4o-mini", BaseURL: baseURL},
//		Clock:   clock,                       // the run's (virtual) clock
//		Secrets: []string{os.Getenv("OPENAI_API_KEY")},
//	})
//	rt := core.New(core.Options{Provider: rec, Clock: clock})
//	... run the agents, rt.Settle(), rt.Close() ...
//	err = rec.Close() // writes the end line and moves the file into place
//
// CreateFile writes to a temporary file and renames it over the cassette
// only when Close finds the recording whole, so a cassette's path never
// holds a recording that looks complete and is not. RecordOptions.StopOn
// (or Recorder.Abort) stops a recording at a failure worth stopping for; a
// stopped recording leaves nothing, or a file marked incomplete at
// RecordOptions.Partial.
//
// What a provider sent is what replay returns: a response keeps the exact
// text of every field the runtime reads (the text, the structured output's
// text as the provider wrote it, each tool call's id and arguments).
//
// API keys never reach the file: the literal Secrets, any SecretPatterns
// and [DefaultSecretPatterns] (bearer tokens, Authorization and api-key
// header lines, sk-... keys) are replaced by [Redacted] in every string of
// every line, the base URL loses its user info and credential query
// parameters, and a line that would still contain a literal secret is
// refused with [ErrSecretLeak]. HTTP headers are never recorded at all: a
// cassette holds semantic requests, not HTTP traffic.
//
// # Replaying
//
// A [Replayer] is a core.Provider that answers from a cassette:
//
//	c, err := cassette.ReadFile("testdata/leaves.cassette")
//	rep := cassette.NewReplayer(c, cassette.ReplayOptions{})
//	rt := core.New(core.Options{Provider: rep})
//	... run the same agents, rt.Close() ...
//	if err := rep.Err(); err != nil { ... } // the first divergence, or nil
//
// Each request must match the next recorded exchange of its run; the
// matched response is returned, with recorded ids rewritten to the ids of
// this run. Message text is compared exactly; JSON the runtime or the model
// wrote (tool results, tool-call arguments, schemas) as JSON values, so
// that layout is not a divergence and meaning is. A request that does not match fails its step with a
// [*Divergence] of kind [Mismatch] (the first differing field, both sides,
// the cassette line), one the cassette lacks fails with [Missing], and
// [Replayer.Extra] reports recorded exchanges no one asked for. How runs
// are matched when agents interleave, and what is normalized before
// comparing (ids, timestamps, elapsed seconds, redacted secrets), is
// described on [Replayer] and in docs/record-replay.md.
//
// A Replayer never opens a network connection: this package does not
// import net or net/http (a test checks its dependency graph).
//
// # The file
//
// A cassette is JSON Lines: a header line (which embeds the scenario's
// source, or names a built-in, with a digest), then two lines per exchange
// (the request, then its response or error), then an end line that tells a
// reader the recording is whole. A request line holds only what is new
// since its run's previous request, and a digest of the whole request, so
// a cassette, and reading and replaying it, grow linearly with the run.
// Keys are in a fixed order and HTML is not escaped, so cassettes diff
// well and can be read and edited by hand. [Read] takes keys exactly as
// spelled, reads within [ReadOptions]' size and depth limits, and reports a
// truncated, incomplete, edited or wrong-version file as a [*FormatError]
// naming the file, line and column. The format is specified in
// docs/record-replay.md.
package cassette
