package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/core/openai"
	"github.com/crux-sim/crux-sim/core/trace"
	"github.com/crux-sim/crux-sim/harness"
	"github.com/crux-sim/crux-sim/harness/cassette"
	"github.com/crux-sim/crux-sim/scenarios"
	"github.com/crux-sim/crux-sim/sim"
)

func newRecordCmd() *cobra.Command {
	var (
		baseURL, model, keyEnv, out, partial string
		noKey                                bool
		seed                                 int64
		timeout                              time.Duration
		retries                              int
		latency                              string
		secretParams                         []string
	)
	cmd := &cobra.Command{
		Use:   "record --base-url URL [--model M] [--api-key-env VAR | --no-api-key] NAME|FILE -o CASSETTE",
		Short: "Run a scenario's agents against a real OpenAI-compatible provider and record a cassette",
		Long: `Run the scenario's agents against a real provider (the scenario's script is
not used; its expectations are checked) under the seed's schedule, and write
every provider exchange, in order, to a cassette that crux-sim replay can
play back offline forever. The cassette embeds the scenario (or names the
built-in), so it replays without the scenario file.

Any OpenAI-compatible Chat Completions endpoint works: OpenAI, Azure, vLLM,
Ollama, llama.cpp's server, LM Studio. --base-url and --model decide what is
sent: the scenario's run.model is used only when --model is not given. The
API key is read from the environment variable --api-key-env names (default
OPENAI_API_KEY); an unset or empty variable is an error before any request
unless --no-api-key says the endpoint needs none. No secret reaches any
output: not the key (with or without its sk- prefix, even when the model
repeats it), not the credential query parameters of --base-url (api-key, key,
token, sig, ... and --secret-param), not an Authorization header. A key under
8 characters is a local server's placeholder, not a secret: record says so,
and does not redact it.

A recording that fails (a refused connection, a rejected key, an unknown
model, a provider that keeps failing after --retries) exits 2 with the
provider's message and writes no cassette: the file appears only once the
recording is whole. --keep-partial FILE keeps a failed attempt there, marked
incomplete, for diagnosis. On a terminal, standard error shows the request
in flight until the report; piped, record is quiet until then.

Exit codes: 0 the recording is whole and every expectation held; 1 it is
whole and an expectation failed; 2 bad usage, bad input or a failed
recording.`,
		Example: `  export OPENAI_API_KEY=sk-...
  crux-sim record --base-url https://api.openai.com/v1 --model gpt-4o-mini research-coordinator -o leaves.cassette
  crux-sim record --base-url http://localhost:11434/v1 --model llama3.1 --no-api-key research-coordinator -o leaves.cassette`,
		Args: oneScenario("record", "crux-sim record --base-url URL research-coordinator -o leaves.cassette", false),
		RunE: func(cmd *cobra.Command, args []string) error {
			if baseURL == "" {
				return usagef("record needs --base-url, the provider's API root, such as https://api.openai.com/v1")
			}
			if out == "" {
				return usagef("record needs -o CASSETTE, the file to write")
			}
			if retries < 0 {
				return usagef("--retries must be 0 (no retry) or more, not %d", retries)
			}
			if timeout < 0 {
				return usagef("--timeout must be 0 (none) or more, not %s", timeout)
			}
			if noKey && cmd.Flags().Changed("api-key-env") {
				return usagef("--no-api-key and --api-key-env contradict each other: give one")
			}
			params, err := compileSecretParams(secretParams)
			if err != nil {
				return err
			}
			key := ""
			if !noKey {
				if key = os.Getenv(keyEnv); key == "" {
					return usagef("the API key variable %s is unset or empty: export it, name another with --api-key-env, or pass --no-api-key for an endpoint that needs no key", keyEnv)
				}
			}
			secrets := append([]string{key}, cassette.URLSecrets(baseURL, params...)...)
			red := cassette.NewRedactor(secrets)
			if err := checkBaseURL(baseURL, red); err != nil {
				return err
			}
			src, err := loadRecordable(args[0])
			if err != nil {
				return err
			}
			sc := src.scenario
			if model == "" {
				model = sc.Run.Model
			}
			if model == "" {
				return usagef("record needs --model: the scenario %s names no run.model to fall back on", sc.Name)
			}
			// The flag decides what goes on the wire: every request of the
			// run names this model, and so does the cassette.
			sc.Run.Model = model
			virtual, err := parseVirtualLatency(latency)
			if err != nil {
				return err
			}
			// On a terminal, the request in flight shows on a line of
			// standard error that every notice, and the report, clears.
			notices := &recordProgress{w: cmd.ErrOrStderr(), on: terminal(cmd.ErrOrStderr())}
			defer notices.clear()
			if key != "" && len(key) < cassette.MinSecretLen {
				// Redacting a value this short ("none", "ollama") would
				// blank ordinary words everywhere; say so rather than let
				// the user believe it was redacted.
				fmt.Fprintf(notices, "crux-sim: the key in %s is shorter than %d characters, so it is taken for a local server's placeholder: it is sent, but not redacted from the cassette or any output\n", keyEnv, cassette.MinSecretLen)
			}
			prov := openai.New(openai.Options{BaseURL: baseURL, APIKey: key, Model: model, Timeout: timeoutOption(timeout), MaxRetries: retryOption(retries), Clock: providerClock,
				OnRetry: func(r openai.Retry) {
					fmt.Fprintln(notices, red.String(fmt.Sprintf("crux-sim: attempt %d failed (%v); retrying in %s", r.Attempt, r.Err, r.Delay)))
				}})
			defer prov.Close()
			s := seed
			// An interrupt (Ctrl-C, SIGTERM) stops the recording like any
			// other failure: the call in flight is cut short, nothing more
			// reaches the provider, and no file is left behind but an
			// explicit --keep-partial.
			stop, unwatch := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer unwatch()
			rec, err := cassette.CreateFile(out, &timedProvider{inner: prov, fixed: virtual, stop: stop, calling: notices.calling}, cassette.RecordOptions{
				Header: cassette.Header{Scenario: sc.Name, ScenarioSource: src.source, ScenarioDigest: src.digest, Seed: &s,
					Model: model, BaseURL: baseURL, Created: time.Now().UTC()},
				Start:   sim.Epoch,
				Secrets: secrets,
				StopOn:  endsRecording,
				Partial: partial,
			})
			if err != nil {
				return usagef("%s", red.String(err.Error()))
			}
			defer context.AfterFunc(stop, func() { rec.Abort(errInterrupted) })()
			// Exchanges are timed on the run's virtual clock, which the
			// recorder finds in each request's context.
			o := harness.Run(sc, harness.Options{Seed: seed, Provider: rec})
			if stop.Err() != nil {
				// The interrupt cut the call in flight, which may have ended
				// the run before the AfterFunc above had its turn: the
				// recording is aborted here, before Close can write it whole.
				rec.Abort(errInterrupted)
			}
			if err := rec.Close(); err != nil {
				// A failed recording is bad input (a wrong URL, key or
				// model, an endpoint that keeps failing), not a failed
				// expectation: nothing was recorded worth checking.
				return usagef("%s", red.String(err.Error()))
			}
			var report bytes.Buffer
			if err := harness.WriteReport(&report, o); err != nil {
				return err
			}
			fmt.Fprintf(&report, "recorded %d exchanges to %s\n", rec.Exchanges(), out)
			notices.clear()
			if _, err := io.WriteString(cmd.OutOrStdout(), red.String(report.String())); err != nil {
				return err
			}
			if !o.Passed() {
				return errFailed
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&baseURL, "base-url", "", "the provider's API root, such as https://api.openai.com/v1 or http://localhost:11434/v1 (a query string is kept)")
	f.StringVar(&model, "model", "", "the model every request names (default: the scenario's run.model)")
	f.StringVar(&keyEnv, "api-key-env", "OPENAI_API_KEY", "the environment variable holding the API key")
	f.BoolVar(&noKey, "no-api-key", false, "the endpoint needs no API key (a local server): send none")
	f.StringVarP(&out, "output", "o", "", "the cassette file to write; it appears only once the recording is whole")
	f.StringVar(&partial, "keep-partial", "", "keep a failed recording in this file, marked incomplete (default: keep nothing)")
	f.StringArrayVar(&secretParams, "secret-param", nil, "a regular expression naming more query parameters of --base-url whose values are secrets (repeatable)")
	f.Int64Var(&seed, "seed", 1, "the seed that chooses the schedule")
	f.DurationVar(&timeout, "timeout", 2*time.Minute, "timeout of one provider attempt; 0 means none")
	f.IntVar(&retries, "retries", 3, "retries of a rate-limited or failed provider call; 0 means none")
	f.StringVar(&latency, "virtual-latency", "real", `virtual time each provider call takes in the simulation: "real" (its wall time, to the 10ms) or a duration such as 2s`)
	return cmd
}

// providerClock times the provider's attempts and waits (Retry-After,
// backoff); nil is the real clock. The tests set one that waits at once.
var providerClock clockwork.Clock

// retryOption maps --retries onto openai.Options.MaxRetries, whose zero
// means "the default": the flag's 0 means no retry at all.
func retryOption(n int) int {
	if n == 0 {
		return openai.NoRetries
	}
	return n
}

// timeoutOption maps --timeout onto openai.Options.Timeout the same way:
// the flag's 0 means no per-attempt timeout, not the default.
func timeoutOption(d time.Duration) time.Duration {
	if d == 0 {
		return openai.NoTimeout
	}
	return d
}

// endsRecording tells which provider errors end a recording: every failure
// of the endpoint itself (refused, unauthorized, unknown model, still
// failing after the retries, not speaking the protocol). A model's own
// answer that the adapter reports as an error (a filtered answer, a token
// limit) is part of the session and recorded like any other.
func endsRecording(err error) bool {
	var oe *openai.Error
	return errors.As(err, &oe) && !errors.Is(oe, openai.ErrContentFiltered) && !errors.Is(oe, openai.ErrLength)
}

func compileSecretParams(pats []string) ([]*regexp.Regexp, error) {
	var out []*regexp.Regexp
	for _, p := range pats {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, usagef("--secret-param %q: %v", p, err)
		}
		out = append(out, re)
	}
	return out, nil
}

// checkBaseURL refuses a base URL no request could be sent to, before any
// is; the message never shows its credentials.
func checkBaseURL(base string, red *cassette.Redactor) error {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usagef("--base-url %s is not an http or https URL with a host, such as https://api.openai.com/v1", red.URL(base))
	}
	return nil
}

// recordProgress is where record's notices go, one at a time, and, on a
// terminal, its progress: one line naming the provider request in flight,
// rewritten at each request and cleared (with spaces, not escape codes)
// before a notice or the report.
type recordProgress struct {
	mu    sync.Mutex
	w     io.Writer
	on    bool
	calls int
	shown int // the width of the progress line on the screen, 0 for none
}

func (p *recordProgress) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearLocked()
	return p.w.Write(b)
}

// calling shows the request about to be sent.
func (p *recordProgress) calling(req *core.Request) {
	if !p.on {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls++
	line := fmt.Sprintf("recording: request %d, %s step %d ...", p.calls, trace.Escape(req.Agent), req.Step)
	p.clearLocked()
	_, _ = io.WriteString(p.w, line)
	p.shown = len(line)
}

func (p *recordProgress) clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearLocked()
}

func (p *recordProgress) clearLocked() {
	if p.shown > 0 {
		_, _ = io.WriteString(p.w, "\r"+strings.Repeat(" ", p.shown)+"\r")
		p.shown = 0
	}
}

// lockedWriter serializes writers to one writer: the notices of a run's
// actors, the standard errors of a campaign's workers.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// recordable is a scenario as record runs it and the cassette keeps it: a
// file's source is embedded; a built-in is named, with the digest of its
// source.
type recordable struct {
	scenario       *scenarios.Scenario
	source, digest string
}

func loadRecordable(arg string) (*recordable, error) {
	if !isFile(arg) {
		scs, err := loadScenarios([]string{arg}, nil)
		if err != nil {
			return nil, err
		}
		src, _ := scenarios.BuiltinSource(arg)
		return &recordable{scenario: scs[0], digest: cassette.Digest(src)}, nil
	}
	// The file is read once, under the scenario loader's limits, and the
	// recording embeds exactly the source it runs.
	sc, src, err := scenarios.LoadFileSource(arg)
	if err != nil {
		return nil, &badInput{[]error{err}}
	}
	return &recordable{scenario: sc, source: string(src)}, nil
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
// errInterrupted is why an interrupted recording stopped.
var errInterrupted = errors.New("the recording was interrupted")

type timedProvider struct {
	inner core.Provider
	fixed time.Duration // -1: the call's wall time
	// stop, when done, cuts short the provider call in flight: the
	// recording was interrupted.
	stop context.Context
	// calling, when set, hears of each request before it is sent.
	calling func(*core.Request)
}

func (p *timedProvider) Step(ctx context.Context, req *core.Request) (*core.Response, error) {
	resp, _, err := p.StepWithFinishReason(ctx, req)
	return resp, err
}

// StepWithFinishReason keeps the adapter's finish reasons in the cassette.
func (p *timedProvider) StepWithFinishReason(ctx context.Context, req *core.Request) (*core.Response, string, error) {
	if p.stop != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer context.AfterFunc(p.stop, cancel)()
		defer cancel()
	}
	if p.calling != nil {
		p.calling(req)
	}
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
	var limits cassetteLimits
	cmd := &cobra.Command{
		Use:   "replay CASSETTE",
		Short: "Replay a recorded cassette offline in lockstep and re-check the expectations",
		Long: `Replay a cassette written by crux-sim record: the scenario it embeds (or the
built-in it names) runs again under the recorded seed and model, and each
provider request must match the next recorded exchange of its agent's run,
which answers it with the exact bytes recorded, after the virtual time the
call took when recorded. Nothing touches the network, and no file the
cassette names is opened.

The first divergence is reported as missing (the run asked for something the
cassette lacks), extra (the cassette holds exchanges the run never asked
for) or mismatch (the request differs), with both sides and the cassette
line. Exit 1 on a divergence or a failed expectation, 2 on a cassette that
cannot be read.`,
		Example: `  crux-sim replay leaves.cassette
  crux-sim replay --scenario my-coordinator.yaml leaves.cassette`,
		Args: func(_ *cobra.Command, args []string) error {
			switch {
			case len(args) == 0:
				return usagef("replay needs the cassette to replay: a file written by crux-sim record, such as crux-sim replay leaves.cassette")
			case len(args) > 1:
				return usagef("replay takes one cassette, not %d arguments; replay each cassette in its own command", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts, err := limits.options()
			if err != nil {
				return err
			}
			r, err := replayCassette(args[0], scenarioFlag, ignoreStatus, opts)
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
	cmd.Flags().StringVar(&scenarioFlag, "scenario", "", "run this scenario (a built-in name or a file) instead of the one the cassette embeds")
	cmd.Flags().BoolVar(&ignoreStatus, "ignore-status", false, "do not compare status blocks (for cassettes recorded outside the simulator)")
	limits.register(cmd.Flags())
	return cmd
}

// cassetteLimits is the --max-cassette-size flag of replay and report.
type cassetteLimits struct{ size sizeFlag }

func (l *cassetteLimits) register(fs *pflag.FlagSet) {
	l.size = sizeFlag(cassette.DefaultMaxBytes)
	fs.Var(&l.size, "max-cassette-size", "the largest cassette to read, in bytes or with a KiB, MiB or GiB suffix")
}

func (l *cassetteLimits) options() (cassette.ReadOptions, error) {
	return cassette.ReadOptions{MaxBytes: int64(l.size)}, nil
}

// replayed is a cassette played back through its scenario.
type replayed struct {
	cassette    *cassette.Cassette
	outcome     *harness.Outcome
	divergences []*cassette.Divergence // in the run's order, then the extra exchanges
}

// replayCassette runs the scenario a cassette carries (or scenarioFlag)
// against the cassette, offline, under the recorded seed and model.
func replayCassette(path, scenarioFlag string, ignoreStatus bool, limits cassette.ReadOptions) (*replayed, error) {
	c, err := readCassette(path, limits)
	if err != nil {
		return nil, err
	}
	sc, err := cassetteScenario(c, path, scenarioFlag)
	if err != nil {
		return nil, err
	}
	if c.Header.Model != "" {
		sc.Run.Model = c.Header.Model // what the recording's requests named
	}
	seed := int64(1)
	if c.Header.Seed != nil {
		seed = *c.Header.Seed
	}
	rep := cassette.NewReplayer(c, cassette.ReplayOptions{IgnoreStatus: ignoreStatus, Sleep: core.Sleep})
	o := harness.Run(sc, harness.Options{Seed: seed, Provider: rep})
	return &replayed{cassette: c, outcome: o, divergences: append(rep.Divergences(), rep.Extra()...)}, nil
}

// readCassette reads a cassette for replay or serve; a bad one is bad input.
func readCassette(path string, limits cassette.ReadOptions) (*cassette.Cassette, error) {
	c, err := cassette.ReadFile(path, limits)
	if err != nil {
		return nil, usagef("%v", err)
	}
	return c, nil
}

// cassetteScenario is the scenario a replay runs: the one named on the
// command line, else the one the cassette embeds, else the built-in it
// names. A cassette never makes replay open a file: its scenario field is
// a name, looked up among the built-ins only.
func cassetteScenario(c *cassette.Cassette, path, scenarioFlag string) (*scenarios.Scenario, error) {
	h := c.Header
	switch {
	case scenarioFlag != "":
		scs, err := loadScenarios([]string{scenarioFlag}, nil)
		if err != nil {
			return nil, err
		}
		return scs[0], nil
	case h.ScenarioSource != "":
		sc, err := scenarios.Load(path+" (the scenario it embeds)", []byte(h.ScenarioSource))
		if err != nil {
			return nil, &badInput{[]error{err}}
		}
		return sc, nil
	case h.Scenario == "":
		return nil, usagef("%s names no scenario; pass --scenario NAME|FILE", path)
	}
	src, ok := scenarios.BuiltinSource(h.Scenario)
	if !ok {
		return nil, usagef("%s: the cassette names scenario %s, which is not a built-in, and embeds no scenario source; pass --scenario NAME|FILE to say what to replay",
			path, quoteName(h.Scenario))
	}
	if h.ScenarioDigest != "" && h.ScenarioDigest != cassette.Digest(src) {
		return nil, usagef("%s: the built-in scenario %s has changed since this cassette was recorded (recorded %s, now %s); record it again, or pass --scenario %s to replay against the current one",
			path, h.Scenario, h.ScenarioDigest, cassette.Digest(src), h.Scenario)
	}
	return scenarios.Builtin(h.Scenario)
}

// quoteName shows a name read from a file: quoted, so that no control
// character reaches the terminal, and cut short.
func quoteName(s string) string {
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return strconv.Quote(s)
}

// isCassette reports whether a regular file starts like a cassette, cut
// short or whole (cassette.StartsLikeCassette); a FIFO or a device is
// never opened here: it could block or never end.
func isCassette(path string) bool {
	if fi, err := os.Stat(path); err != nil || !fi.Mode().IsRegular() {
		return false
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 64)
	n, _ := io.ReadFull(f, head)
	return cassette.StartsLikeCassette(head[:n])
}
