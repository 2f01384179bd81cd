// Package serve plays the model for every agent of a scenario over the
// OpenAI Chat Completions protocol, so that a coordinator written in any
// language, on its own background Work runtime and its own OpenAI client,
// is tested against the same scenarios, scripts, expectations and
// cassettes as an in-process run.
//
// A [Server] answers POST /v1/chat/completions (plain and streaming) and
// GET /v1/models. For each request it works out which scenario agent is
// calling (the model crux-sim/<agent>, else the system text and the tools
// offered matching exactly one agent) and which run of it (a client resends
// the whole history, so a request continues the run whose last request and
// answer its history starts with), and answers exactly as the scripted
// provider does in-process: the same provider, the same turn selection,
// request-dependent turns, symbolic references, latency (on the server's
// clock, in real time) and provider errors. Or a cassette answers, in
// lockstep, as crux-sim replay does.
//
// The scenario's provider faults (latency and provider errors on an
// agent's run and step) fire in front of the script or the cassette, chosen
// by harness.Faults, the code that chooses them for a simulated run, under
// Options.Seed, Swarm or Plan, in the order requests arrive. Faults that act
// inside the runtime (work actions on an owner's behalf, crashes) cannot
// reach the client's runtime: they are skipped, each with a finding
// (Server.Unapplied).
//
// What the client sends becomes the run's semantic trace, in the format of
// an in-process run: the tools offered, the messages new since the run's
// previous request, the status block its runtime wrote (read back with
// core.ParseStatus), the tool results and what they show of Work. A child
// run is tied to the call that started it by the first message its input
// renders to. At the end of the session (POST /crux-sim/finish, Finish, or
// the idle timeout) harness.Judge checks the scenario's expectations and
// the invariants over that trace, and the rules that only the wire shows
// are checked as well: the work tool's exact schema, the status block's
// format and place, work.ref shapes, status rows naming only the owner's
// Work.
//
// A run seen in real time measures a result call's wait with the
// network's time in it, so the caps invariant allows ResultWaitTolerance
// past the 30 s cap.
//
// Bad requests get an OpenAI error body with a status a client handles and
// are noted as findings. Work states are known only where the client shows
// them, so the trace records states seen, not every state passed through.
package serve
