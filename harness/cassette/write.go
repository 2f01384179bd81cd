package cassette

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
	"time"
)

// ErrSecretLeak is returned instead of writing a line that would still
// contain a configured literal secret after redaction. It guards the
// promise that no cassette holds a key, whatever path a secret took.
var ErrSecretLeak = errors.New("a configured secret would be written; refusing to write the line")

const modulePath = "github.com/crux-sim/crux-sim"

// defaultVersion is the crux-sim version linked into this binary.
func defaultVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown)"
	}
	if bi.Main.Path == modulePath {
		return bi.Main.Version
	}
	for _, d := range bi.Deps {
		if d.Path == modulePath {
			return d.Version
		}
	}
	return "(devel)"
}

// encoder renders lines: compact JSON, keys in struct order, no HTML
// escaping (so <, > and & stay readable), one line each.
type encoder struct {
	red     *Redactor
	secrets []string // literal secrets checked after encoding
}

func (e *encoder) line(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	out := b.Bytes()
	for _, s := range e.secrets {
		if len(s) >= MinSecretLen && bytes.Contains(out, []byte(s)) {
			return nil, ErrSecretLeak
		}
	}
	return out, nil
}

func (e *encoder) header(h Header) ([]byte, error) {
	l := headerLine{Kind: kindHeader, Format: Format, Version: Version, CruxSim: h.CruxSim, Scenario: e.red.String(h.Scenario),
		Seed: h.Seed, Model: e.red.String(h.Model), BaseURL: e.red.URL(h.BaseURL)}
	if l.CruxSim == "" {
		l.CruxSim = defaultVersion()
	}
	if !h.Created.IsZero() {
		l.Created = h.Created.UTC().Format(time.RFC3339Nano)
	}
	return e.line(l)
}

// exchange renders the two lines of one exchange.
func (e *encoder) exchange(x *Exchange) ([]byte, error) {
	req, err := e.line(requestLine{Kind: kindRequest, Seq: x.Seq, Agent: e.red.String(x.Agent), Ordinal: x.Ordinal,
		Run: e.red.String(x.Run), Step: x.Step, At: x.Timing.At.String(), RealAt: x.Timing.RealAt.String(),
		Request: toWireRequest(x.Request, e.red)})
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
