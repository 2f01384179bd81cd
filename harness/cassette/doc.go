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
//	... run the agents, rt.Close() ...
//	err = rec.Close() // writes the end line
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
// this run. A request that does not match fails its step with a
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
// A cassette is JSON Lines: a header line, then two lines per exchange (the
// request, then its response or error), then an end line that tells a
// reader the recording is whole. Keys are in a fixed order and HTML is not
// escaped, so cassettes diff well and can be read and edited by hand.
// [Read] reports a truncated, edited or wrong-version file as a
// [*FormatError] naming the file, line and column. The format is specified
// in docs/record-replay.md.
package cassette
