package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/core/openai"
	"github.com/crux-sim/crux-sim/harness"
	"github.com/crux-sim/crux-sim/harness/cassette"
)

func newRecordCmd() *cobra.Command {
	var (
		baseURL, model, keyEnv, out string
		seed                        int64
		timeout                     time.Duration
		retries                     int
		latency                     string
	)
	cmd := &cobra.Command{
		Use:   "record --base-url URL --model M [--api-key-env VAR] NAME|FILE -o CASSETTE",
		Short: "Run a scenario's agents against a real OpenAI-compatible provider and record a cassette",
		Long: `Run the scenario's agents against a real provider (the scenario's script is
not used; its expectations are checked) under the seed's schedule, and write
every provider exchange, in order, to a cassette that crux-sim replay can
play back offline forever.

Any OpenAI-compatible Chat Completions endpoint works: OpenAI, Azure, vLLM,
Ollama, llama.cpp's server, LM Studio. The API key is read from the
environment variable --api-key-env names and is never written: neither the
key nor any Authorization header reaches the cassette.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if baseURL == "" || model == "" {
				return usagef("record needs --base-url and --model")
			}
			if out == "" {
				return usagef("record needs -o CASSETTE, the file to write")
			}
			scs, err := loadScenarios(args)
			if err != nil {
				return err
			}
			sc := scs[0]
			virtual, err := parseVirtualLatency(latency)
			if err != nil {
				return err
			}
			key := os.Getenv(keyEnv)
			prov := openai.New(openai.Options{BaseURL: baseURL, APIKey: key, Model: model, Timeout: timeout, MaxRetries: retries})
			var secrets []string
			if key != "" {
				secrets = append(secrets, key)
			}
			s := seed
			rec, err := cassette.CreateFile(out, &timedProvider{inner: prov, fixed: virtual}, cassette.RecordOptions{
				Header:  cassette.Header{Scenario: args[0], Seed: &s, Model: model, BaseURL: baseURL, Created: time.Now().UTC()},
				Start:   harness.Epoch,
				Secrets: secrets,
			})
			if err != nil {
				return err
			}
			// Exchanges are timed on the run's virtual clock, which the
			// recorder finds in each request's context.
			o := harness.Run(sc, harness.Options{Seed: seed, Provider: rec})
			closeErr := rec.Close()
			if err := harness.WriteReport(cmd.OutOrStdout(), o); err != nil {
				return err
			}
			if closeErr != nil {
				return fmt.Errorf("writing %s: %w", out, closeErr)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "recorded %d exchanges to %s\n", rec.Exchanges(), out)
			if !o.Passed() {
				return errFailed
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&baseURL, "base-url", "", "the provider's base URL, such as https://api.openai.com/v1 or http://localhost:11434/v1")
	f.StringVar(&model, "model", "", "the model name")
	f.StringVar(&keyEnv, "api-key-env", "OPENAI_API_KEY", "the environment variable holding the API key (may be unset for local servers)")
	f.StringVarP(&out, "output", "o", "", "the cassette file to write")
	f.Int64Var(&seed, "seed", 1, "the seed that chooses the schedule")
	f.DurationVar(&timeout, "timeout", 2*time.Minute, "timeout of one provider attempt")
	f.IntVar(&retries, "retries", 3, "retries of a rate-limited or failed provider call")
	f.StringVar(&latency, "virtual-latency", "real", `virtual time each provider call takes in the simulation: "real" (its wall time, to the 10ms) or a duration such as 2s`)
	return cmd
}

// parseVirtualLatency reads --virtual-latency: -1 means the real duration.
func parseVirtualLatency(s string) (time.Duration, error) {
	if s == "real" {
		return -1, nil
	}
	d, err := core.ParseDuration(s)
	if err != nil {
		return 0, usagef("--virtual-latency: %v", err)
	}
	return d, nil
}

// timedProvider lets a real provider call take virtual time, so that under
// the simulator a child is still running while its parent goes on, as in
// production. The recorder measures the call including this wait, and
// replay waits the recorded virtual duration, so the interleaving replays.
type timedProvider struct {
	inner core.Provider
	fixed time.Duration // -1: the call's wall time
}

func (p *timedProvider) Step(ctx context.Context, req *core.Request) (*core.Response, error) {
	resp, _, err := p.StepWithFinishReason(ctx, req)
	return resp, err
}

// StepWithFinishReason keeps the adapter's finish reasons in the cassette.
func (p *timedProvider) StepWithFinishReason(ctx context.Context, req *core.Request) (*core.Response, string, error) {
	start := time.Now()
	var resp *core.Response
	var reason string
	var err error
	if fr, ok := p.inner.(interface {
		StepWithFinishReason(context.Context, *core.Request) (*core.Response, string, error)
	}); ok {
		resp, reason, err = fr.StepWithFinishReason(ctx, req)
	} else {
		resp, err = p.inner.Step(ctx, req)
	}
	d := p.fixed
	if d < 0 {
		d = time.Since(start).Round(10 * time.Millisecond)
	}
	if sleepErr := core.Sleep(ctx, d); sleepErr != nil && err == nil {
		err = sleepErr
	}
	return resp, reason, err
}

func newReplayCmd() *cobra.Command {
	var scenarioFlag string
	var ignoreStatus bool
	cmd := &cobra.Command{
		Use:   "replay CASSETTE",
		Short: "Replay a recorded cassette offline in lockstep and re-check the expectations",
		Long: `Replay a cassette written by crux-sim record: the scenario runs again under the
recorded seed, and each provider request must match the next recorded
exchange of its agent's run, which answers it, after the virtual time the
call took when recorded. Nothing touches the network.

The first divergence is reported as missing (the run asked for something the
cassette lacks), extra (the cassette holds exchanges the run never asked
for) or mismatch (the request differs), with both sides and the cassette
line. Exit 1 on a divergence or a failed expectation.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := replayCassette(args[0], scenarioFlag, ignoreStatus)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if err := harness.WriteReport(out, r.outcome); err != nil {
				return err
			}
			if len(r.divergences) > 0 {
				fmt.Fprintf(out, "DIVERGED from %s: %d divergence(s); the first:\n%s\n", args[0], len(r.divergences), r.divergences[0].Error())
				return errFailed
			}
			fmt.Fprintf(out, "replayed %d exchanges from %s with no divergence\n", len(r.cassette.Exchanges), args[0])
			if !r.outcome.Passed() {
				return errFailed
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&scenarioFlag, "scenario", "", "the scenario to run (default: the one the cassette names)")
	cmd.Flags().BoolVar(&ignoreStatus, "ignore-status", false, "do not compare status blocks (for cassettes recorded outside the simulator)")
	return cmd
}

// replayed is a cassette played back through its scenario.
type replayed struct {
	cassette    *cassette.Cassette
	outcome     *harness.Outcome
	divergences []*cassette.Divergence // in the run's order, then the extra exchanges
}

// replayCassette runs the scenario a cassette names (or scenarioFlag)
// against the cassette, offline, under the recorded seed.
func replayCassette(path, scenarioFlag string, ignoreStatus bool) (*replayed, error) {
	c, err := cassette.ReadFile(path)
	if err != nil {
		return nil, usagef("%v", err)
	}
	target := c.Header.Scenario
	if scenarioFlag != "" {
		target = scenarioFlag
	}
	if target == "" {
		return nil, usagef("%s names no scenario; pass --scenario NAME|FILE", path)
	}
	scs, err := loadScenarios([]string{target})
	if err != nil {
		return nil, err
	}
	seed := int64(1)
	if c.Header.Seed != nil {
		seed = *c.Header.Seed
	}
	rep := cassette.NewReplayer(c, cassette.ReplayOptions{IgnoreStatus: ignoreStatus, Sleep: core.Sleep})
	o := harness.Run(scs[0], harness.Options{Seed: seed, Provider: rep})
	return &replayed{cassette: c, outcome: o, divergences: append(rep.Divergences(), rep.Extra()...)}, nil
}

// isCassette reports whether a file starts like a cassette.
func isCassette(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 64)
	n, _ := io.ReadFull(f, head)
	return strings.Contains(string(head[:n]), `"format":"crux-sim-cassette"`)
}
