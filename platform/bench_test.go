package platform_test

import (
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/platform"
	"github.com/crux-sim/crux-sim/platform/store"
	"github.com/crux-sim/crux-sim/scripted"
	"github.com/crux-sim/crux-sim/sim"
)

// week runs 8 virtual days with the sweepers on (board and inbox every
// 5 minutes, workspace every 6 hours) beside the loops that setup creates,
// and returns how many scheduled runs fired and how many of them called
// loop_wait (a run offered it, a dynamic loop's, waits an hour).
func week(b *testing.B, setup func(p *platform.Platform, root string)) (runs, waits int) {
	s := sim.New(sim.Options{ReplayStrict: true, Start: epoch})
	model := scripted.New()
	model.Answer("scout", func(req *core.Request) (*core.Response, error) {
		if req.Step == 1 && slices.ContainsFunc(req.Tools, func(t core.ToolSpec) bool { return t.Name == platform.ToolLoopWait }) {
			waits++
			return &core.Response{ToolCalls: []core.ToolCall{{ID: "w", Name: platform.ToolLoopWait, Arguments: `{"delay":"1h"}`}}}, nil
		}
		return &core.Response{Text: "all quiet"}, nil
	})
	p, err := platform.New(platform.Options{
		Core:     core.Options{Provider: model, Clock: s.Clock(), IDs: &core.SequentialIDs{}, Executor: s},
		Agents:   map[string]*core.Agent{"scout": {ID: "scout"}},
		Store:    store.NewMemory(),
		Instance: "bench",
	})
	if err != nil {
		b.Fatal(err)
	}
	root, err := p.NewSession(platform.SessionOptions{Agent: "scout", User: "ada"})
	if err != nil {
		b.Fatal(err)
	}
	setup(p, root)
	if err := s.RunFor(8 * 24 * time.Hour); err != nil {
		b.Fatal(err)
	}
	runs = len(ofType(p.Events(root), platform.EventScheduleFired))
	_ = p.Close()
	if err := s.Settle(); err != nil {
		b.Fatal(err)
	}
	return runs, waits
}

// BenchmarkSweeperBesideHourlyLoop is the comparison point: eight virtual
// days of a 5-minute sweeper beside an hourly loop (cron "0 * * * *", so
// that it runs all eight days: 192 runs).
func BenchmarkSweeperBesideHourlyLoop(b *testing.B) {
	b.ReportAllocs()
	defer reportCPU(b)()
	for b.Loop() {
		runs, _ := week(b, func(p *platform.Platform, root string) {
			if _, err := p.Cron(root, "0 * * * *", "check the build"); err != nil {
				b.Fatal(err)
			}
		})
		if runs != 192 {
			b.Fatalf("fired %d runs, want 192", runs)
		}
	}
}

// BenchmarkLoopWeek is the loop-week scenario: a fixed hourly loop (it
// expires after 3 days) and a dynamic loop that always waits an hour (it
// expires after 7 days), over 8 virtual days with the sweepers running.
func BenchmarkLoopWeek(b *testing.B) {
	b.ReportAllocs()
	defer reportCPU(b)()
	for b.Loop() {
		runs, waits := week(b, func(p *platform.Platform, root string) {
			if err := p.Send(root, "/loop 1h check the build"); err != nil {
				b.Fatal(err)
			}
			if err := p.Send(root, "/loop watch the queue"); err != nil {
				b.Fatal(err)
			}
		})
		if runs != 72+168 || waits != 168 {
			b.Fatalf("fired %d runs, %d of them calling loop_wait; want %d, and the dynamic loop's %d", runs, waits, 72+168, 168)
		}
	}
}

// reportCPU adds cpu-ns/op: the process's user+system CPU time per
// iteration. On a shared, loaded machine wall time (ns/op) mostly measures
// the other tenants; CPU time measures this code.
func reportCPU(b *testing.B) func() {
	cpu := func() time.Duration {
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	start := cpu()
	return func() {
		b.ReportMetric(float64(cpu()-start)/float64(b.N), "cpu-ns/op")
	}
}

// BenchmarkIdlePoll is the scheduled-work ticker alone over eight virtual
// days: one row, due in a month, no sweepers and no recovery pass, so that
// every one of the 11,520 wake-ups is an idle poll; ns/poll is the cost of
// one, the clock's jump to it included.
func BenchmarkIdlePoll(b *testing.B) {
	const days = 8
	b.ReportAllocs()
	defer reportCPU(b)()
	for b.Loop() {
		s := sim.New(sim.Options{ReplayStrict: true, Start: epoch})
		p, err := platform.New(platform.Options{
			Core:                     core.Options{Provider: scripted.New(), Clock: s.Clock(), IDs: &core.SequentialIDs{}, Executor: s},
			Agents:                   map[string]*core.Agent{"scout": {ID: "scout"}},
			Store:                    store.NewMemory(),
			Instance:                 "bench",
			NoSweepers:               true,
			ScheduleRecoveryInterval: 60 * 24 * time.Hour,
		})
		if err != nil {
			b.Fatal(err)
		}
		root, err := p.NewSession(platform.SessionOptions{Agent: "scout", User: "ada"})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := p.Cron(root, "0 9 1 2 *", "the yearly report"); err != nil {
			b.Fatal(err)
		}
		if err := s.Settle(); err != nil {
			b.Fatal(err)
		}
		steps := s.Steps()
		if err := s.RunFor(days * 24 * time.Hour); err != nil {
			b.Fatal(err)
		}
		if s.Steps() != steps {
			b.Fatalf("%d actor steps in a week of idle polls", s.Steps()-steps)
		}
		_ = p.Close()
		if err := s.Settle(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*days*24*60), "ns/poll")
}
