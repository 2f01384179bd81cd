package cassette

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/crux-sim/crux-sim/core"
)

// ErrClosed: a step was sent through a Recorder after Close.
var ErrClosed = errors.New("cassette recorder is closed")

// ErrAborted: the recording was stopped (Recorder.Abort, or a provider
// error RecordOptions.StopOn chose); later steps fail with it, and Close
// writes no complete cassette.
var ErrAborted = errors.New("the recording was stopped")

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
	// StopOn, when set, is asked about every provider error: when it
	// returns true the recording stops there (see Abort). A refused
	// connection or a rejected key is not a session worth replaying.
	StopOn func(error) bool
	// Partial, for CreateFile, names the file to keep a failed recording
	// in, with a header that says it is incomplete; default: nothing is
	// kept, and the cassette's own path is never touched by a failure.
	Partial string
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
	file     *fileTarget // set by CreateFile
	header   Header
	start    timePair
	seq      int
	ordinals map[string]int // run id → ordinal among its agent's runs
	runs     map[string]int // agent → runs seen
	err      error          // the first write error; every later step fails
	aborted  error          // why the recording was stopped
	stopOn   func(error) bool
	closed   bool
}

// fileTarget is CreateFile's: the recording goes to a temporary file next
// to the cassette, renamed over it only once the recording is whole.
type fileTarget struct {
	f       *os.File
	path    string // the cassette
	partial string // where a failed recording is kept, if anywhere
	hdrLen  int    // bytes of the header line at the start of f
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
		enc:      &encoder{red: NewRedactor(opts.Secrets, opts.SecretPatterns...)},
		clock:    opts.Clock,
		real:     opts.RealClock,
		w:        w,
		header:   opts.Header,
		stopOn:   opts.StopOn,
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

// CreateFile records into a cassette at path. The recording is written to
// a temporary file in the same directory and renamed to path by Close once
// it is whole, so that path never holds a cassette that looks complete but
// is not, and a failed re-recording leaves an earlier cassette there as it
// was. A failed recording is removed, or kept at opts.Partial with a header
// that says it is incomplete.
func CreateFile(path string, inner core.Provider, opts RecordOptions) (*Recorder, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".*.recording")
	if err != nil {
		return nil, fmt.Errorf("cassette: %w", err)
	}
	var hdr countingWriter
	r, err := NewRecorder(io.MultiWriter(f, &hdr), inner, opts)
	if err != nil {
		_ = f.Close()
		_ = os.Remove(f.Name())
		return nil, err
	}
	r.w = f
	r.file = &fileTarget{f: f, path: path, partial: opts.Partial, hdrLen: hdr.n}
	return r, nil
}

type countingWriter struct{ n int }

func (c *countingWriter) Write(b []byte) (int, error) {
	c.n += len(b)
	return len(b), nil
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
	if r.aborted != nil {
		err := r.aborted
		r.mu.Unlock()
		return nil, fmt.Errorf("%w: %w", ErrAborted, err)
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
	if err != nil && r.stopOn != nil && r.stopOn(err) {
		r.Abort(err)
	}
	return resp, err
}

// Abort stops the recording because of reason: every later step fails
// with ErrAborted (and reason) without reaching the provider, and Close
// writes no end line. The first reason is kept.
func (r *Recorder) Abort(reason error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.aborted == nil && reason != nil {
		r.aborted = reason
	}
}

// Stopped returns why the recording was stopped (Abort, StopOn), or nil.
func (r *Recorder) Stopped() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.aborted
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

// Close ends the recording. A whole recording gets its end line, which
// tells a reader it is complete, and CreateFile's is renamed into place. A
// stopped or failed one gets none: CreateFile's is removed, or kept at
// RecordOptions.Partial marked incomplete, and Close returns an error
// wrapping ErrAborted and the reason. Steps after Close fail with
// ErrClosed; a second Close does nothing.
func (r *Recorder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	failure := r.err
	if failure == nil {
		failure = r.aborted
	}
	var err error
	if failure == nil {
		var b []byte
		if b, err = r.enc.end(r.seq); err == nil {
			_, err = r.w.Write(b)
		}
		if err != nil {
			failure = err
		}
	}
	if r.file == nil {
		if failure != nil {
			return r.failed(failure, "")
		}
		return nil
	}
	if failure != nil {
		kept, kerr := r.file.keep(r.enc, r.header, failure)
		if kerr != nil {
			return fmt.Errorf("%w (and keeping the partial recording failed: %w)", r.failed(failure, ""), kerr)
		}
		return r.failed(failure, kept)
	}
	if err := r.file.commit(); err != nil {
		return fmt.Errorf("cassette: writing %s: %w", r.file.path, err)
	}
	return nil
}

// failed is the error Close returns for a recording that did not finish.
func (r *Recorder) failed(reason error, kept string) error {
	var where string
	switch {
	case r.file == nil:
		where = "; the cassette has no end line"
	case kept != "":
		where = fmt.Sprintf("; %s was not written; the %d exchange(s) recorded are kept in %s, marked incomplete", r.file.path, r.seq, kept)
	default:
		where = fmt.Sprintf("; %s was not written", r.file.path)
	}
	return fmt.Errorf("cassette: %w: %w%s", ErrAborted, reason, where)
}

// commit makes the recording the cassette.
func (t *fileTarget) commit() error {
	name := t.f.Name()
	err := t.f.Sync()
	if cerr := t.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		// CreateTemp makes the file private; a cassette is meant to be
		// shared like any other test data.
		err = os.Chmod(name, 0o644)
	}
	if err == nil {
		err = os.Rename(name, t.path)
	}
	if err != nil {
		_ = os.Remove(name)
	}
	return err
}

// keep removes a failed recording, or moves it to the partial path with a
// header that says it is incomplete. It returns where it was kept.
func (t *fileTarget) keep(enc *encoder, h Header, reason error) (string, error) {
	name := t.f.Name()
	defer os.Remove(name)
	defer t.f.Close()
	if t.partial == "" {
		return "", nil
	}
	h.Incomplete = reason.Error()
	hdr, err := enc.header(h)
	if err != nil {
		return "", err
	}
	out, err := os.Create(t.partial)
	if err != nil {
		return "", err
	}
	_, err = out.Write(hdr)
	if err == nil {
		_, err = t.f.Seek(int64(t.hdrLen), io.SeekStart)
	}
	if err == nil {
		_, err = io.Copy(out, t.f)
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(t.partial)
		return "", err
	}
	return t.partial, nil
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
