// Package htmlreport renders a run as one self-contained HTML page: a
// timeline of its agent runs and background Work beside its transcript.
//
// The input is a semantic trace plus whatever is known about it
// ([Input]): the verdicts of the scenario's expectations, invariant
// violations, findings, a command that reproduces it. [FromOutcome] fills
// one in from a simulated run, a scripted one or a fuzz failure's shrunk
// schedule alike; a replayed cassette passes its trace directly, so every
// source renders the same way. [Write] and [WriteFile] render it.
//
// # The timeline
//
// There is a lane per top-level or foreground agent run and one per
// background Work item; a Work lane also carries the events of the child
// run that executed it, and lanes nest under the run that owns them. A Work
// lane shows the Work's lifetime as a bar, one segment per state, coloured
// by state; every other event is a mark on its lane (requests, responses,
// tool results and work calls, sends, guidance, faults, injected actions).
// A work call or injected action is joined by a connector to the Work it
// acts on.
//
// The horizontal axis is event order, not time: each trace entry the text
// transcript shows gets one column, labelled with its virtual-time offset.
// A simulated run does most of its work at the same virtual instant (a
// cancel race is often a dozen events at +0s), and a proportional time
// axis would draw all of them on one pixel. An order axis keeps every
// event and every Work state visible, in the order it happened, which is
// what a person debugging a race needs; the axis groups the columns that
// share an instant under one time label, and a clock jump is drawn as a
// hatched band labelled with how far time jumped.
//
// Every mark has the trace entry's text line as its tooltip; clicking it
// opens a detail panel (the tools offered, the status block a request
// carried, a work call's arguments and answer, a transition's from and to)
// and highlights the entry's line in the transcript; clicking a transcript
// line does the reverse, and the arrow keys step through events. The page
// loads nothing from the network: its CSS and script are inlined.
//
// # Structure
//
// The document's structure is part of its contract, so that tests (and
// scripts) can read it: lanes are .lane elements in the track area with
// data-lane, bars are .bar elements with data-work and data-state, marks
// are .mark elements with data-kind (the trace entry's kind) and
// data-entry (the entry's 1-based number in the trace), and transcript
// lines are .tline elements with the same data-entry.
package htmlreport
