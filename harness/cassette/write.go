package cassette

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/internal/buildinfo"
)

// ErrSecretLeak is returned instead of writing a line that would still
// contain a configured literal secret after redaction. It guards the
// promise that no cassette holds a key, whatever path a secret took.
var ErrSecretLeak = errors.New("a configured secret would be written; refusing to write the line")

// encoder renders lines: compact JSON, keys in struct order, no HTML
// escaping (so <, > and & stay readable), one line each. It follows every
// run it has written a request of, so that each request line holds only
// what is new since that run's previous one.
type encoder struct {
	red  *Redactor // its literal secrets are checked again after encoding
	runs map[queueKey]*encRun
}

// encRun is what the encoder remembers of one run.
type encRun struct {
	state runState
	dig   digester
	setup []byte // the previous request's encoded setup
}

// encodeJSON is the one way this package renders JSON: compact, keys in
// struct order, HTML not escaped, no trailing newline.
func encodeJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), newline), nil
}

func (e *encoder) line(v any) ([]byte, error) {
	out, err := encodeJSON(v)
	if err != nil {
		return nil, err
	}
	out = append(out, '\n')
	if e.red.Leaks(out) {
		return nil, ErrSecretLeak
	}
	return out, nil
}

func (e *encoder) header(h Header) ([]byte, error) {
	l := headerLine{Kind: kindHeader, Format: Format, Version: Version, CruxSim: h.CruxSim, Scenario: e.red.String(h.Scenario),
		ScenarioDigest: h.ScenarioDigest, Seed: h.Seed, Model: e.red.String(h.Model), BaseURL: e.red.URL(h.BaseURL),
		Incomplete: e.red.String(h.Incomplete), ScenarioSource: e.red.String(h.ScenarioSource)}
	if l.CruxSim == "" {
		l.CruxSim = buildinfo.Read().String()
	}
	if l.ScenarioSource != "" && l.ScenarioDigest == "" {
		l.ScenarioDigest = Digest([]byte(l.ScenarioSource))
	}
	if !h.Created.IsZero() {
		l.Created = h.Created.UTC().Format(time.RFC3339Nano)
	}
	return e.line(l)
}

// request renders what a request adds to its run's previous one, and its
// digest.
func (e *encoder) request(x *Exchange) (wireRequest, string, error) {
	if e.runs == nil {
		e.runs = map[queueKey]*encRun{}
	}
	k := queueKey{x.Agent, x.Ordinal}
	run := e.runs[k]
	if run == nil {
		run = &encRun{}
		e.runs[k] = run
	}
	req := x.Request
	prior, same := run.state.advance(req)
	w := wireRequest{Prior: prior, Inherit: same, Status: toWireStatus(req.Status, e.red)}
	w.Messages = make([]wireMessage, len(req.Messages)-prior)
	for i := range w.Messages {
		w.Messages[i] = toWireMessage(req.Messages[prior+i], e.red)
	}
	if !same {
		setup := toWireSetup(req, e.red)
		w.Model, w.System, w.Tools, w.Output = setup.Model, setup.System, setup.Tools, setup.Output
		b, err := encodeJSON(setup)
		if err != nil {
			return w, "", err
		}
		run.setup = b
	}
	status, err := encodeJSON(w.Status)
	if err != nil {
		return w, "", err
	}
	var encErr error
	digest := run.dig.digest(prior, len(req.Messages), func(i int) []byte {
		var m wireMessage
		if i >= prior {
			m = w.Messages[i-prior]
		} else {
			m = toWireMessage(req.Messages[i], e.red)
		}
		b, err := encodeJSON(m)
		if err != nil {
			encErr = err
		}
		return b
	}, run.setup, status)
	return w, digest, encErr
}

// exchange renders the two lines of one exchange.
func (e *encoder) exchange(x *Exchange) ([]byte, error) {
	w, digest, err := e.request(x)
	if err != nil {
		return nil, fmt.Errorf("request of exchange %d: %w", x.Seq, err)
	}
	req, err := e.line(requestLine{Kind: kindRequest, Seq: x.Seq, Agent: e.red.String(x.Agent), Ordinal: x.Ordinal,
		Run: e.red.String(x.Run), Step: x.Step, At: x.Timing.At.String(), RealAt: x.Timing.RealAt.String(),
		Digest: digest, Request: w})
	if err != nil {
		return nil, fmt.Errorf("request of exchange %d: %w", x.Seq, err)
	}
	rl := responseLine{Kind: kindResponse, Seq: x.Seq, Agent: e.red.String(x.Agent), Step: x.Step,
		Duration: x.Timing.Duration.String(), RealDuration: x.Timing.RealDuration.String()}
	if x.Err != nil {
		rl.Error = &wireError{Kind: string(x.Err.Kind), Message: e.red.String(x.Err.Message)}
	} else {
		rl.Response = toWireResponse(x.Response, x.FinishReason, e.red)
	}
	resp, err := e.line(rl)
	if err != nil {
		return nil, fmt.Errorf("response of exchange %d: %w", x.Seq, err)
	}
	x.Digest = digest
	return append(req, resp...), nil
}

func (e *encoder) end(n int) ([]byte, error) {
	return e.line(endLine{Kind: kindEnd, Exchanges: n})
}

// Write writes the cassette in the current format: the header, every
// exchange, the end line. Exchanges are renumbered in order, so a cassette
// edited in Go (an exchange dropped or added) writes consistently. Strings
// pass through DefaultSecretPatterns on the way out.
func (c *Cassette) Write(w io.Writer) error {
	enc := &encoder{red: NewRedactor(nil)}
	var buf bytes.Buffer
	h, err := enc.header(c.Header)
	if err != nil {
		return fmt.Errorf("cassette: header: %w", err)
	}
	buf.Write(h)
	for i, x := range c.Exchanges {
		cp := *x
		cp.Seq = i + 1
		if cp.Request == nil {
			cp.Request = &core.Request{}
		}
		b, err := enc.exchange(&cp)
		if err != nil {
			return fmt.Errorf("cassette: %w", err)
		}
		buf.Write(b)
	}
	end, err := enc.end(len(c.Exchanges))
	if err != nil {
		return fmt.Errorf("cassette: %w", err)
	}
	buf.Write(end)
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("cassette: writing %s: %w", nameOr(c.File), err)
	}
	return nil
}

func nameOr(file string) string {
	if strings.TrimSpace(file) == "" {
		return "cassette"
	}
	return file
}
