package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/crux-sim/crux-sim/harness"
	"github.com/crux-sim/crux-sim/harness/htmlreport"
	"github.com/crux-sim/crux-sim/harness/serve"
	"github.com/crux-sim/crux-sim/scenarios"
)

func newServeCmd() *cobra.Command {
	var addr, cassetteFile, report string
	var idle time.Duration
	var ignoreStatus, swarm bool
	var seed int64
	var limits cassetteLimits
	cmd := &cobra.Command{
		Use:   "serve [--addr HOST:PORT] [--seed N] [--swarm] [--report FILE.html] [--idle-timeout D] NAME|FILE  |  serve --cassette FILE",
		Short: "Play a scenario's model over an OpenAI-compatible endpoint and check what a client's own runtime sends",
		Long: `Serve the scenario (a built-in name or a YAML file) as an OpenAI-compatible
Chat Completions endpoint, so that a coordinator written in any language, on
its own background Work runtime and its own OpenAI client, runs against the
scenario's script: crux-sim plays the model for every agent in the tree and
checks the requests the client's runtime sends.

The first line of standard output is exactly "listening on http://HOST:PORT/v1":
point the client's base URL there. It serves POST /v1/chat/completions (plain
and stream: true) and GET /v1/models. Name the calling agent with the model
crux-sim/<agent>, or let crux-sim tell it by its system text and tools.
Answers come from the scenario's script exactly as in-process (tool calls,
text, structured output, provider errors, request-dependent turns), with
scripted latency in real time; with --cassette, from a recorded cassette in
lockstep instead, and its divergences are reported.

The scenario's provider faults apply as they do in crux-sim run: latency on
an agent's step N (waited out in real time) and provider errors (HTTP 500),
chosen by --seed (and with --swarm the seed's own fault mix) in the order
the requests arrive. Faults that act inside the runtime (work actions on an
owner's behalf, crashes) cannot reach the client's runtime: each is named
on standard error at start-up and as a finding in the report, and skipped.

POST /crux-sim/finish, SIGINT or SIGTERM (or --idle-timeout with no request)
ends the session: the finish request's body is the verdicts as crux-sim run
--format json writes them, the text report goes to standard output, and the
exit code is 0 when every expectation held and no invariant broke, 1
otherwise, 2 on bad usage or input.`,
		Example: `  crux-sim serve research-coordinator
  OPENAI_BASE_URL=http://127.0.0.1:PORT/v1 node my-coordinator.js
  curl -X POST http://127.0.0.1:PORT/crux-sim/finish`,
		Args: oneScenario("serve", "", true),
		RunE: func(cmd *cobra.Command, args []string) error {
			if idle < 0 {
				return usagef("--idle-timeout must be 0 (none) or more, not %s", idle)
			}
			opts := serve.Options{IdleTimeout: idle, IgnoreStatus: ignoreStatus, Seed: seed, Swarm: swarm}
			var sc *scenarios.Scenario
			switch {
			case cassetteFile != "":
				lim, err := limits.options()
				if err != nil {
					return err
				}
				c, err := readCassette(cassetteFile, lim)
				if err != nil {
					return err
				}
				flag := ""
				if len(args) == 1 {
					flag = args[0]
				}
				if sc, err = cassetteScenario(c, cassetteFile, flag); err != nil {
					return err
				}
				opts.Cassette = c
			case len(args) == 0:
				return usagef("serve needs a scenario: a built-in name (see crux-sim list), a file, or --cassette FILE")
			default:
				scs, err := loadScenarios(args, cmd.InOrStdin())
				if err != nil {
					return err
				}
				sc = scs[0]
			}
			opts.Scenario = sc
			srv, err := serve.New(opts)
			if err != nil {
				return usagef("%v", err)
			}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return usagef("--addr %s: %v", addr, err)
			}
			hs := &http.Server{Handler: srv, ReadHeaderTimeout: 30 * time.Second}
			served := make(chan error, 1)
			go func() { served <- hs.Serve(ln) }()
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "listening on http://%s/v1\n", ln.Addr())
			for _, f := range srv.Unapplied() {
				fmt.Fprintln(cmd.ErrOrStderr(), "crux-sim serve:", f)
			}

			sig, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			var res *serve.Result
			select {
			case <-srv.Done():
				res = srv.Result()
			case <-sig.Done():
				res = srv.Finish("a signal")
			case err := <-served:
				res = srv.Finish("the listener failed: " + err.Error())
			}
			shut, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := hs.Shutdown(shut); err != nil && !errors.Is(err, context.DeadlineExceeded) {
				fmt.Fprintln(cmd.ErrOrStderr(), "crux-sim: shutting down:", err)
			}
			o := res.Outcome
			if err := harness.WriteReport(out, o); err != nil {
				return err
			}
			fmt.Fprintf(out, "session ended by %s\n", res.Reason)
			if len(res.Divergences) > 0 {
				fmt.Fprintf(out, "DIVERGED from %s: %d divergence(s); the first:\n%s\n", cassetteFile, len(res.Divergences), res.Divergences[0].Error())
			}
			if report != "" {
				in := htmlreport.FromOutcome(o)
				in.Command = "crux-sim serve " + shellQuote(sc.Name)
				if err := writeReport(out, report, in); err != nil {
					return err
				}
			}
			if !res.Passed() {
				return errFailed
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&addr, "addr", "127.0.0.1:0", "the address to listen on (port 0: any free port, printed on the first line)")
	f.StringVar(&cassetteFile, "cassette", "", "answer from this recorded cassette, in lockstep, instead of the scenario's script")
	f.BoolVar(&ignoreStatus, "ignore-status", false, "with --cassette, do not compare status blocks")
	f.StringVar(&report, "report", "", "also write the HTML timeline of what the client did to this file")
	f.DurationVar(&idle, "idle-timeout", 5*time.Minute, "end the session after this long with no request; 0 means never")
	f.Int64Var(&seed, "seed", 1, "the seed that chooses which of the scenario's provider faults fire and the latencies they draw, in the order requests arrive")
	f.BoolVar(&swarm, "swarm", false, "give the seed its own fault mix, as crux-sim fuzz does")
	limits.register(f)
	return cmd
}
