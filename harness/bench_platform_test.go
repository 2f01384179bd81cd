package harness_test

import "testing"

// BenchmarkLoopWeek runs the loop-week built-in through the harness: eight
// virtual days of a fixed hourly loop and a dynamic loop (240 runs) beside
// the 5-minute board and inbox sweepers and the 6-hour workspace sweeper,
// with the trace, the invariants after every step and the expectations.
// Issue 9's target: under 13 ms per run.
func BenchmarkLoopWeek(b *testing.B) { benchmarkRun(b, "loop-week", 1) }

// BenchmarkTaskDAGCrash runs the task-dag-crash built-in at seed 1: a
// five-task DAG, a crash mid-attempt and a restart on the durable store.
func BenchmarkTaskDAGCrash(b *testing.B) { benchmarkRun(b, "task-dag-crash", 1) }
