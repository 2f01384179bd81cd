package sim_test

import (
	"context"
	"fmt"
	"time"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/sim"
)

// Your own Go code under virtual time: a poller that checks a job every
// ten minutes and a job that takes 65 minutes. Nothing sleeps for real: the
// clock jumps from deadline to deadline, and the same seed gives the same
// story on every run.
func Example() {
	s := sim.New(sim.Options{Seed: 7})
	clock := s.Clock()
	done := make(chan struct{})

	s.Go("job", func() {
		clock.Sleep(65 * time.Minute) // parks this actor only
		close(done)
	})
	s.Go("poller", func() {
		for {
			timer := make(chan struct{})
			clock.AfterFunc(10*time.Minute, func() { close(timer) })
			if s.Wait("the next poll or the job", timer, done) == 1 {
				fmt.Println("poller: job finished at", clock.Elapsed())
				return
			}
			fmt.Println("poller: still running at", clock.Elapsed())
		}
	})

	if err := s.Run(nil); err != nil {
		fmt.Println(err)
	}
	fmt.Println("steps:", s.Steps(), "virtual time:", clock.Elapsed())
	// Output:
	// poller: still running at 10m0s
	// poller: still running at 20m0s
	// poller: still running at 30m0s
	// poller: still running at 40m0s
	// poller: still running at 50m0s
	// poller: still running at 1h0m0s
	// poller: job finished at 1h5m0s
	// steps: 10 virtual time: 1h5m0s
}

// A core runtime on the simulator: the simulator is the runtime's executor
// and its clock, so every background child is an actor and every wait is
// virtual.
func ExampleSim_runtime() {
	s := sim.New(sim.Options{Seed: 1})
	rt := core.New(core.Options{
		Provider: core.ProviderFunc(func(_ context.Context, req *core.Request) (*core.Response, error) {
			return &core.Response{Text: "hello from " + req.Agent}, nil
		}),
		Clock:    s.Clock(),
		IDs:      &core.SequentialIDs{},
		Executor: s,
	})
	var out string
	s.Go("main", func() {
		res, err := rt.Run(context.Background(), &core.Agent{ID: "greeter"}, nil)
		if err != nil {
			out = err.Error()
			return
		}
		out = res.Output.Raw
		_ = rt.Close()
	})
	if err := s.Run(nil); err != nil {
		fmt.Println(err)
	}
	fmt.Println(out)
	// Output: hello from greeter
}
