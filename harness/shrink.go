package harness

import (
	"github.com/crux-sim/crux-sim/scenarios"
)

// Shrink reduces a failing run to a small schedule that fails the same way
// (the same Signature): it drops faults, shortens latencies and jitter,
// truncates the choices and turns choices into "the first runnable actor",
// greedily, until nothing more helps or the replay budget is spent.
func Shrink(sc *scenarios.Scenario, target string, failed *Outcome, opts CampaignOptions) *CampaignFailure {
	budget := opts.ShrinkRuns
	if budget <= 0 {
		budget = 2000
	}
	sig := Signature(failed)
	best := newSchedule(sc, target, failed, sig, opts.Testing.Defects, opts.CheckLogs)
	f := &CampaignFailure{Scenario: sc.Name, Target: target, Seed: failed.Seed, Signature: sig, Outcome: failed}

	try := func(cand *ScheduleFile) bool {
		if f.ShrinkRuns >= budget {
			return false
		}
		f.ShrinkRuns++
		ro := cand.Options()
		ro.Store, ro.Coroutines = opts.Store, opts.coroutines
		o := Run(sc, ro)
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

func (s *ScheduleFile) clone() *ScheduleFile {
	c := *s
	c.Plan.Faults = append([]PlannedFault(nil), s.Plan.Faults...)
	c.Choices = append([]int(nil), s.Choices...)
	return &c
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
