package harness

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/crux-sim/crux-sim/core/trace"
	"github.com/crux-sim/crux-sim/scenarios"
)

// WriteReport writes a run's transcript, one PASS or FAIL line per
// expectation (failures with the transcript around them), invariant
// violations, findings, and a summary line.
func WriteReport(w io.Writer, o *Outcome) error {
	bw := bufio.NewWriter(w)
	run := fmt.Sprintf("seed %d", o.Seed)
	if o.Observed {
		run = "served"
	}
	if cause := o.RootCause(); cause != "" {
		// The root cause first: the expectations below failed because of it.
		fmt.Fprintf(bw, "FAIL %s (%s): %s\n", trace.Escape(o.Scenario), run, trace.Escape(cause))
	}
	fmt.Fprintf(bw, "== %s · %s ==\n", trace.Escape(o.Scenario), run)
	if o.PrepareErr != nil {
		fmt.Fprintf(bw, "preparation failed: %s\n", trace.Escape(o.PrepareErr.Error()))
	}
	if err := o.Trace.WriteText(bw); err != nil {
		return err
	}
	fmt.Fprintln(bw, "-- expectations --")
	held := 0
	for _, v := range o.Verdicts {
		if v.Failure == nil {
			held++
			fmt.Fprintf(bw, "PASS %s\n", trace.Escape(v.Description))
			continue
		}
		fmt.Fprintf(bw, "FAIL %s\n", trace.Escape(v.Description))
		for _, line := range strings.Split(v.Failure.Report(o.Trace), "\n") {
			fmt.Fprintf(bw, "     %s\n", line)
		}
	}
	for _, v := range o.Violations {
		fmt.Fprintf(bw, "FAIL %s\n", trace.Escape(v.String()))
		if v.Entry > 0 {
			for _, line := range strings.Split(windowOf(o.Trace, v.Entry-1), "\n") {
				fmt.Fprintf(bw, "     %s\n", line)
			}
		}
	}
	if len(o.Findings) > 0 {
		fmt.Fprintln(bw, "-- findings --")
		for _, f := range o.Findings {
			fmt.Fprintf(bw, "note %s\n", trace.Escape(f))
		}
	}
	verdict := "PASS"
	if !o.Passed() {
		verdict = "FAIL"
	}
	fmt.Fprintf(bw, "%s %s (%s): %d of %d expectations held", verdict, trace.Escape(o.Scenario), run, held, len(o.Verdicts))
	if len(o.Violations) > 0 {
		fmt.Fprintf(bw, ", %d invariant violations", len(o.Violations))
	}
	if o.Observed {
		fmt.Fprintf(bw, "; %d requests, %s\n\n", o.Steps, trace.Offset(o.Elapsed))
	} else {
		fmt.Fprintf(bw, "; %d steps, %s virtual\n\n", o.Steps, o.Trace.At(o.Elapsed))
	}
	return bw.Flush()
}

func windowOf(t *trace.Trace, at int) string {
	return scenarios.Window(t, at, 4)
}

// ReportJSON renders a run for machines: the normalized trace, verdicts,
// violations, findings and the schedule's size.
func ReportJSON(o *Outcome) (json.RawMessage, error) {
	type verdict struct {
		Expectation string `json:"expectation"`
		Passed      bool   `json:"passed"`
		Message     string `json:"message,omitempty"`
		Entry       int    `json:"entry,omitempty"`
	}
	doc := struct {
		Scenario   string       `json:"scenario"`
		Seed       int64        `json:"seed"`
		Passed     bool         `json:"passed"`
		Prepare    string       `json:"prepareError,omitempty"`
		RootCause  string       `json:"rootCause,omitempty"`
		Verdicts   []verdict    `json:"verdicts"`
		Violations []Violation  `json:"violations,omitempty"`
		Findings   []string     `json:"findings,omitempty"`
		Steps      int          `json:"steps"`
		Elapsed    string       `json:"elapsed"`
		Trace      *trace.Trace `json:"trace"`
	}{Scenario: o.Scenario, Seed: o.Seed, Passed: o.Passed(), Violations: o.Violations, Findings: o.Findings,
		Steps: o.Steps, Elapsed: trace.Offset(o.Elapsed), Trace: o.Trace, Verdicts: []verdict{}}
	if o.PrepareErr != nil {
		doc.Prepare = o.PrepareErr.Error()
	}
	if c := scenarios.RootCause(o.Verdicts); c != nil {
		doc.RootCause = c.Description + ": " + c.Failure.Message
	}
	for _, v := range o.Verdicts {
		vd := verdict{Expectation: v.Description, Passed: v.Failure == nil}
		if v.Failure != nil {
			vd.Message = v.Failure.Message
			if v.Failure.At >= 0 {
				vd.Entry = v.Failure.At + 1
			}
		}
		doc.Verdicts = append(doc.Verdicts, vd)
	}
	return json.MarshalIndent(doc, "", "  ")
}
