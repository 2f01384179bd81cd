package harness

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/scenarios"
)

// ScheduleVersion is the version of the schedule file format.
const ScheduleVersion = 1

// Schedule is a failing run made explicit: the scheduling choices and the
// faults that fired. Replaying it needs the scenario but not the seed's
// random streams, so it stays valid when the code changes how it draws.
type Schedule struct {
	Version  int    `json:"version"`
	Scenario string `json:"scenario"`
	// Target is what to pass to crux-sim run: a built-in name or a path.
	Target string `json:"target"`
	// Seed is the seed the failure was found under (for reference; the
	// replay does not draw from it).
	Seed      int64          `json:"seed"`
	Signature string         `json:"signature"`
	Mutations core.Mutations `json:"mutations,omitzero"`
	Plan      Plan           `json:"plan"`
	// Choices are the scheduling choices, index into the runnable actors
	// at each step; past the end the first runnable actor goes.
	Choices []int `json:"choices"`
}

// Options replays the schedule.
func (s *Schedule) Options() Options {
	plan := s.Plan
	return Options{Seed: s.Seed, Replay: s.Choices, ReplayStrict: true, Plan: &plan, Mutations: s.Mutations}
}

// Replay runs the schedule on the scenario.
func (s *Schedule) Replay(sc *scenarios.Scenario) *Outcome { return Run(sc, s.Options()) }

// Describe renders the schedule for people.
func (s *Schedule) Describe() string {
	var b strings.Builder
	nonzero := 0
	for _, c := range s.Choices {
		if c != 0 {
			nonzero++
		}
	}
	fmt.Fprintf(&b, "%d scheduling choices (%d not the first runnable actor)", len(s.Choices), nonzero)
	if len(s.Plan.Faults) == 0 {
		b.WriteString(", no faults")
	}
	for _, f := range s.Plan.Faults {
		b.WriteString("; " + f.String())
	}
	return b.String()
}

// WriteFile writes the schedule as indented JSON.
func (s *Schedule) WriteFile(path string) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// ReadSchedule reads a schedule file.
func ReadSchedule(path string) (*Schedule, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s Schedule
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("%s: not a schedule file: %v", path, err)
	}
	if s.Version != ScheduleVersion {
		return nil, fmt.Errorf("%s: schedule version %d, this crux-sim reads version %d", path, s.Version, ScheduleVersion)
	}
	return &s, nil
}

// Shrink reduces a failing run to a small schedule that fails the same way
// (the same Signature): it drops faults, shortens latencies and jitter,
// truncates the choices and turns choices into "the first runnable actor",
// greedily, until nothing more helps or the replay budget is spent.
func Shrink(sc *scenarios.Scenario, target string, failed *Outcome, opts CampaignOptions) *Failure {
	budget := opts.ShrinkRuns
	if budget <= 0 {
		budget = 2000
	}
	sig := Signature(failed)
	best := &Schedule{Version: ScheduleVersion, Scenario: sc.Name, Target: target, Seed: failed.Seed, Signature: sig,
		Mutations: opts.Mutations, Plan: failed.Fired, Choices: choices(failed.Decisions)}
	f := &Failure{Scenario: sc.Name, Target: target, Seed: failed.Seed, Signature: sig, Outcome: failed}

	try := func(cand *Schedule) bool {
		if f.ShrinkRuns >= budget {
			return false
		}
		f.ShrinkRuns++
		o := cand.Replay(sc)
		if o.Passed() || Signature(o) != sig {
			return false
		}
		cand.Choices = trimZeros(choices(o.Decisions))
		best, f.Shrunk = cand, o
		return true
	}
	// The explicit schedule must reproduce the failure before it can shrink.
	if !try(best.clone()) {
		f.Schedule = best
		f.Shrunk = failed
		return f
	}
	for improved := true; improved && f.ShrinkRuns < budget; {
		improved = false
		// Drop faults, last first.
		for i := len(best.Plan.Faults) - 1; i >= 0; i-- {
			c := best.clone()
			c.Plan.Faults = append(c.Plan.Faults[:i:i], c.Plan.Faults[i+1:]...)
			if try(c) {
				improved = true
			}
		}
		// Shorten latencies, delays and jitter.
		for i := range best.Plan.Faults {
			for best.Plan.Faults[i].Latency > 0 {
				c := best.clone()
				c.Plan.Faults[i].Latency /= 2
				if !try(c) {
					break
				}
				improved = true
			}
			for best.Plan.Faults[i].Delay > 0 {
				c := best.clone()
				c.Plan.Faults[i].Delay /= 2
				if !try(c) {
					break
				}
				improved = true
			}
			for best.Plan.Faults[i].Yields > 0 {
				c := best.clone()
				c.Plan.Faults[i].Yields /= 2
				if !try(c) {
					break
				}
				improved = true
			}
		}
		// The shortest prefix of choices that still fails.
		lo, hi := 0, len(best.Choices)
		for lo < hi {
			mid := (lo + hi) / 2
			c := best.clone()
			c.Choices = c.Choices[:mid]
			if try(c) {
				hi = min(mid, len(best.Choices))
				improved = true
			} else {
				lo = mid + 1
			}
		}
		// Each remaining choice: the first runnable actor, or a lower one.
		for i := len(best.Choices) - 1; i >= 0; i-- {
			if i >= len(best.Choices) || best.Choices[i] == 0 {
				continue
			}
			c := best.clone()
			c.Choices[i] = 0
			if try(c) {
				improved = true
				continue
			}
			c = best.clone()
			c.Choices[i]--
			if c.Choices[i] > 0 && try(c) {
				improved = true
			}
		}
	}
	f.Schedule = best
	return f
}

func (s *Schedule) clone() *Schedule {
	c := *s
	c.Plan.Faults = append([]PlannedFault(nil), s.Plan.Faults...)
	c.Choices = append([]int(nil), s.Choices...)
	return &c
}

func choices(ds []Decision) []int {
	out := make([]int, len(ds))
	for i, d := range ds {
		out[i] = d.Choice
	}
	return out
}

// trimZeros drops trailing first-runnable choices, which a strict replay
// makes anyway.
func trimZeros(c []int) []int {
	n := len(c)
	for n > 0 && c[n-1] == 0 {
		n--
	}
	return c[:n]
}
