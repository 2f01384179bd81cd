package cassette

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/crux-sim/crux-sim/core"
)

// ErrClosed: a step was sent through a Recorder after Close.
var ErrClosed = errors.New("cassette recorder is closed")

// RecordOptions configure a Recorder.
type RecordOptions struct {
	// Header is written first: scenario, seed, model, base URL, crux-sim
	// version, creation time.
	Header Header
	// Clock is the run's clock (the simulator's virtual clock, or the
	// runtime's); exchange offsets and durations are measured on it.
	// Default: the clock of the runtime making each request (core.ClockOf),
	// else the real clock.
	Clock clockwork.Clock
	// Start is the instant the run's offsets count from, when Clock is left
	// to the runtime (a simulation's epoch); default the first request.
	Start time.Time
	// RealClock is the wall clock, for real offsets and durations;
	// default the real clock. Tests pass a fake one for stable bytes.
	RealClock clockwork.Clock
	// Secrets are literal values never to write, such as the API key:
	// they are replaced by [REDACTED] wherever they appear, and a line that
	// would still hold one is refused (ErrSecretLeak).
	Secrets []string
	// SecretPatterns are redacted as well as DefaultSecretPatterns.
	SecretPatterns []*regexp.Regexp
}

// finishReasoner is what a provider offers when it knows why the model
// stopped; the OpenAI adapter does. It is matched structurally so that this
// package need not import the adapter (and with it net/http).
type finishReasoner interface {
	StepWithFinishReason(ctx context.Context, req *core.Request) (*core.Response, string, error)
}

// Recorder is a core.Provider that passes every step to another provider
// and writes the exchange to a cassette. It is safe for concurrent use:
// exchanges are written whole, in the order they finish.
type Recorder struct {
	inner core.Provider
	enc   *encoder
	clock clockwork.Clock // nil: the runtime's, per request
	real  clockwork.Clock
	began bool // start is set

	mu       sync.Mutex
	w        io.Writer
	closer   io.Closer
	start    timePair
	seq      int
	ordinals map[string]int // run id → ordinal among its agent's runs
	runs     map[string]int // agent → runs seen
	err      error          // the first write error; every later step fails
	closed   bool
}

var _ core.Provider = (*Recorder)(nil)

// NewRecorder writes the header to w at once and returns a Recorder around
// inner. Close writes the end line; it does not close w.
func NewRecorder(w io.Writer, inner core.Provider, opts RecordOptions) (*Recorder, error) {
	if opts.RealClock == nil {
		opts.RealClock = clockwork.NewRealClock()
	}
	r := &Recorder{
		inner:    inner,
		enc:      &encoder{red: NewRedactor(opts.Secrets, opts.SecretPatterns...), secrets: opts.Secrets},
		clock:    opts.Clock,
		real:     opts.RealClock,
		w:        w,
		ordinals: map[string]int{},
		runs:     map[string]int{},
	}
	if opts.Clock != nil {
		r.start, r.began = r.now(context.Background()), true
	} else if !opts.Start.IsZero() {
		r.start, r.began = timePair{opts.Start.UnixNano(), r.real.Now().UnixNano()}, true
	}
	h, err := r.enc.header(opts.Header)
	if err != nil {
		return nil, fmt.Errorf("cassette: header: %w", err)
	}
	if _, err := w.Write(h); err != nil {
		return nil, fmt.Errorf("cassette: writing the header: %w", err)
	}
	return r, nil
}

// CreateFile creates (or truncates) the file at path and records into it;
// Close closes the file.
func CreateFile(path string, inner core.Provider, opts RecordOptions) (*Recorder, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cassette: %w", err)
	}
	r, err := NewRecorder(f, inner, opts)
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	r.closer = f
	return r, nil
}

type timePair struct{ virtual, real int64 }

func (r *Recorder) now(ctx context.Context) timePair {
	clock := r.clock
	if clock == nil {
		if clock = core.ClockOf(ctx); clock == nil {
			clock = r.real
		}
	}
	return timePair{clock.Now().UnixNano(), r.real.Now().UnixNano()}
}

// Step passes the request on and records the exchange. A provider error is
// recorded and returned as it was. A failure to write the cassette fails
// the step: a recording with holes would replay as a lie.
func (r *Recorder) Step(ctx context.Context, req *core.Request) (*core.Response, error) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, ErrClosed
	}
	ordinal, ok := r.ordinals[req.Run]
	if !ok {
		r.runs[req.Agent]++
		ordinal = r.runs[req.Agent]
		r.ordinals[req.Run] = ordinal
	}
	if !r.began {
		r.start, r.began = r.now(ctx), true
	}
	r.mu.Unlock()

	began := r.now(ctx)
	var (
		resp   *core.Response
		reason string
		err    error
	)
	if fr, ok := r.inner.(finishReasoner); ok {
		resp, reason, err = fr.StepWithFinishReason(ctx, req)
	} else {
		resp, err = r.inner.Step(ctx, req)
	}
	ended := r.now(ctx)

	x := &Exchange{Agent: req.Agent, Ordinal: ordinal, Run: req.Run, Step: req.Step, Request: req, Response: resp,
		FinishReason: reason, Timing: Timing{
			At: nanos(began.virtual - r.start.virtual), Duration: nanos(ended.virtual - began.virtual),
			RealAt: nanos(began.real - r.start.real), RealDuration: nanos(ended.real - began.real),
		}}
	if err != nil {
		x.Response, x.Err = nil, recordError(err)
	}
	if werr := r.write(x); werr != nil {
		return nil, fmt.Errorf("cassette: recording %s step %d: %w", req.Agent, req.Step, werr)
	}
	return resp, err
}

func (r *Recorder) write(x *Exchange) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return r.err
	}
	if r.closed {
		return ErrClosed
	}
	x.Seq = r.seq + 1
	b, err := r.enc.exchange(x)
	if err == nil {
		_, err = r.w.Write(b)
	}
	if err != nil {
		r.err = err
		return err
	}
	r.seq++
	return nil
}

// Close writes the end line (which tells a reader the recording is whole)
// and closes the file of CreateFile. Steps after Close fail with ErrClosed.
func (r *Recorder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	var err error
	if r.err == nil {
		var b []byte
		if b, err = r.enc.end(r.seq); err == nil {
			_, err = r.w.Write(b)
		}
	}
	if r.closer != nil {
		if cerr := r.closer.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("cassette: closing: %w", err)
	}
	return r.err
}

// Exchanges returns how many exchanges were written so far.
func (r *Recorder) Exchanges() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seq
}

func nanos(n int64) time.Duration {
	if n < 0 {
		return 0
	}
	return time.Duration(n)
}
