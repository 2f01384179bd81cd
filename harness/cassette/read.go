package cassette

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Reading errors, for errors.Is on a *FormatError.
var (
	// ErrNotCassette: the first line is not a cassette header.
	ErrNotCassette = errors.New("not a crux-sim cassette")
	// ErrVersion: the cassette's format version is not the one this
	// crux-sim reads.
	ErrVersion = errors.New("unsupported cassette version")
	// ErrTruncated: the file ends early: in the middle of a line, between
	// a request and its response, or before the end line. A recording that
	// was interrupted, or a file cut short in transit.
	ErrTruncated = errors.New("cassette is truncated")
	// ErrMalformed: a line is not what the format allows at that place: bad
	// JSON, an unknown key, a wrong type, a value out of range, exchanges
	// out of order. Usually a hand edit gone wrong.
	ErrMalformed = errors.New("malformed cassette")
)

// FormatError is a problem reading a cassette, at a place in the file.
type FormatError struct {
	File string
	// Line is from 1; Column, from 1, is 0 when no single column is to
	// blame.
	Line, Column int
	Err          error
}

func (e *FormatError) Error() string {
	loc := nameOr(e.File)
	if e.Line > 0 {
		loc += fmt.Sprintf(":%d", e.Line)
		if e.Column > 0 {
			loc += fmt.Sprintf(":%d", e.Column)
		}
	}
	return loc + ": " + e.Err.Error()
}

func (e *FormatError) Unwrap() error { return e.Err }

// ReadFile reads the cassette at path.
func ReadFile(path string) (*Cassette, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cassette: %w", err)
	}
	defer f.Close()
	return Read(f, path)
}

// Read reads a cassette; name is used in errors and divergence reports.
// Every problem is a *FormatError naming the line (and the column where one
// is to blame) and wrapping ErrNotCassette, ErrVersion, ErrTruncated or
// ErrMalformed.
func Read(r io.Reader, name string) (*Cassette, error) {
	rd := &reader{file: name, c: &Cassette{File: name}, lastStep: map[queueKey]int{}, runOf: map[queueKey]string{}}
	if err := rd.read(bufio.NewReader(r)); err != nil {
		return nil, err
	}
	return rd.c, nil
}

type queueKey struct {
	agent   string
	ordinal int
}

type reader struct {
	file string
	c    *Cassette

	line     int
	raw      []byte
	state    int // what the next line must be
	pending  *Exchange
	ended    bool
	lastStep map[queueKey]int
	runOf    map[queueKey]string
}

const (
	wantHeader = iota
	wantRequestOrEnd
	wantResponse
	wantNothing
)

func (rd *reader) fail(col int, sentinel error, format string, args ...any) error {
	return &FormatError{File: rd.file, Line: rd.line, Column: col, Err: fmt.Errorf("%w: %s", sentinel, fmt.Sprintf(format, args...))}
}

func (rd *reader) read(br *bufio.Reader) error {
	for {
		raw, err := br.ReadBytes('\n')
		if len(raw) == 0 && errors.Is(err, io.EOF) {
			break
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return &FormatError{File: rd.file, Line: rd.line + 1, Err: fmt.Errorf("reading: %w", err)}
		}
		rd.line++
		complete := err == nil
		rd.raw = bytes.TrimRight(raw, "\r\n")
		if len(bytes.TrimSpace(rd.raw)) == 0 {
			continue // blank lines are harmless; a hand edit may leave one
		}
		if perr := rd.parse(complete); perr != nil {
			return perr
		}
	}
	switch rd.state {
	case wantHeader:
		return &FormatError{File: rd.file, Line: rd.line, Err: fmt.Errorf("%w: the file is empty", ErrNotCassette)}
	case wantResponse:
		return rd.fail(0, ErrTruncated, "the file ends after the request of exchange %d, without its response", rd.pending.Seq)
	case wantRequestOrEnd:
		return rd.fail(0, ErrTruncated, "the file ends after %d exchange(s) without its end line; the recording was interrupted or the file was cut short", len(rd.c.Exchanges))
	}
	return nil
}

func (rd *reader) parse(complete bool) error {
	var probe struct {
		Kind string `json:"kind"`
	}
	if err := json.Unmarshal(rd.raw, &probe); err != nil {
		if rd.state == wantHeader {
			return rd.fail(0, ErrNotCassette, "the first line is not a JSON cassette header")
		}
		return rd.jsonError(err, complete)
	}
	if rd.state == wantNothing {
		return rd.fail(0, ErrMalformed, "a %q line follows the end line", probe.Kind)
	}
	if rd.state == wantHeader {
		if probe.Kind != kindHeader {
			return rd.fail(0, ErrNotCassette, "the first line is not a cassette header")
		}
		return rd.header()
	}
	switch probe.Kind {
	case kindRequest:
		if rd.state == wantResponse {
			return rd.fail(0, ErrMalformed, "exchange %d's request (line %d) has no response line before this request", rd.pending.Seq, rd.pending.Line)
		}
		return rd.request(complete)
	case kindResponse:
		if rd.state != wantResponse {
			return rd.fail(0, ErrMalformed, "a response line without a request line before it")
		}
		return rd.response(complete)
	case kindEnd:
		if rd.state == wantResponse {
			return rd.fail(0, ErrMalformed, "exchange %d's request (line %d) has no response line before the end line", rd.pending.Seq, rd.pending.Line)
		}
		return rd.end(complete)
	case kindHeader:
		return rd.fail(0, ErrMalformed, "a second header line")
	}
	return rd.fail(rd.keyColumn("kind"), ErrMalformed, "unknown line kind %q (want request, response or end)", probe.Kind)
}

// strict decodes the line into v, refusing unknown keys, so that a typo in
// a hand edit is caught rather than silently ignored.
func (rd *reader) strict(v any, complete bool) error {
	dec := json.NewDecoder(bytes.NewReader(rd.raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return rd.jsonError(err, complete)
	}
	if dec.More() {
		off := dec.InputOffset()
		return rd.fail(int(off)+1, ErrMalformed, "unexpected text after the JSON value")
	}
	return nil
}

func (rd *reader) jsonError(err error, complete bool) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		if !complete {
			return rd.fail(int(syn.Offset)+1, ErrTruncated, "the last line is cut short: %v", syn)
		}
		return rd.fail(int(syn.Offset), ErrMalformed, "invalid JSON: %v", syn)
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		if !complete {
			return rd.fail(len(rd.raw)+1, ErrTruncated, "the last line is cut short")
		}
		return rd.fail(len(rd.raw)+1, ErrMalformed, "the line ends in the middle of a JSON value")
	case errors.As(err, &typ):
		return rd.fail(int(typ.Offset), ErrMalformed, "%s has the wrong type: got JSON %s, want %s", typ.Field, typ.Value, typ.Type)
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return rd.fail(rd.keyColumn(strings.Trim(name, `"`)), ErrMalformed, "unknown key %s", name)
	}
	return rd.fail(0, ErrMalformed, "%s", msg)
}

// keyColumn finds where a key first appears in the line, from 1; 0 when it
// does not.
func (rd *reader) keyColumn(key string) int {
	i := bytes.Index(rd.raw, []byte(`"`+key+`"`))
	return i + 1
}

var fieldIndex = regexp.MustCompile(`\[(\d+)\]`)

// fieldColumn finds the key a field path such as request.messages[3].role
// ends in: its n-th appearance, n being the last index in the path. The
// format's keys make that exact for the paths fromWireRequest reports.
func (rd *reader) fieldColumn(field string) int {
	key := field[strings.LastIndexAny(field, ".]")+1:]
	n := 0
	if m := fieldIndex.FindAllStringSubmatch(field, -1); len(m) > 0 {
		n, _ = strconv.Atoi(m[len(m)-1][1])
	}
	off := 0
	for i := 0; ; i++ {
		j := bytes.Index(rd.raw[off:], []byte(`"`+key+`"`))
		if j < 0 {
			return 0
		}
		if i == n {
			return off + j + 1
		}
		off += j + 1
	}
}

// keyColumnAfter finds key after the first appearance of outer.
func (rd *reader) keyColumnAfter(outer, key string) int {
	o := bytes.Index(rd.raw, []byte(`"`+outer+`"`))
	if o < 0 {
		return 0
	}
	i := bytes.Index(rd.raw[o:], []byte(`"`+key+`"`))
	if i < 0 {
		return 0
	}
	return o + i + 1
}

func (rd *reader) header() error {
	var h headerLine
	if err := rd.strictHeader(&h); err != nil {
		return err
	}
	if h.Format != Format {
		return rd.fail(rd.keyColumn("format"), ErrNotCassette, "format is %q, want %q", h.Format, Format)
	}
	switch {
	case h.Version > Version:
		return rd.fail(rd.keyColumn("version"), ErrVersion, "version %d is newer than this crux-sim reads (%d); upgrade crux-sim or re-record", h.Version, Version)
	case h.Version != Version:
		return rd.fail(rd.keyColumn("version"), ErrVersion, "version %d is not one this crux-sim reads (%d)", h.Version, Version)
	}
	hd := Header{Version: h.Version, CruxSim: h.CruxSim, Scenario: h.Scenario, Seed: h.Seed, Model: h.Model, BaseURL: h.BaseURL}
	if h.Created != "" {
		t, err := time.Parse(time.RFC3339Nano, h.Created)
		if err != nil {
			return rd.fail(rd.keyColumn("created"), ErrMalformed, "created is not an RFC 3339 time: %q", h.Created)
		}
		hd.Created = t
	}
	rd.c.Header = hd
	rd.state = wantRequestOrEnd
	return nil
}

// strictHeader decodes the header, reading the version first so that a
// newer file with keys this version does not know is reported as a version
// problem, not as an unknown key.
func (rd *reader) strictHeader(h *headerLine) error {
	var loose struct {
		Format  string `json:"format"`
		Version int    `json:"version"`
	}
	if err := json.Unmarshal(rd.raw, &loose); err == nil && loose.Format == Format && loose.Version != Version {
		h.Format, h.Version = loose.Format, loose.Version
		return nil
	}
	return rd.strict(h, true)
}

func (rd *reader) request(complete bool) error {
	var l requestLine
	if err := rd.strict(&l, complete); err != nil {
		return err
	}
	want := len(rd.c.Exchanges) + 1
	switch {
	case l.Seq != want:
		return rd.fail(rd.keyColumn("seq"), ErrMalformed, "exchange seq is %d, want %d: exchanges were removed, added or reordered", l.Seq, want)
	case l.Agent == "":
		return rd.fail(rd.keyColumn("agent"), ErrMalformed, "agent is empty")
	case l.Ordinal < 1:
		return rd.fail(rd.keyColumn("ordinal"), ErrMalformed, "ordinal is %d, want 1 or more", l.Ordinal)
	case l.Step < 1:
		return rd.fail(rd.keyColumn("step"), ErrMalformed, "step is %d, want 1 or more", l.Step)
	}
	k := queueKey{l.Agent, l.Ordinal}
	if last, ok := rd.lastStep[k]; ok && l.Step <= last {
		return rd.fail(rd.keyColumn("step"), ErrMalformed, "step %d of %s run %d follows its step %d; steps of a run only go up", l.Step, l.Agent, l.Ordinal, last)
	}
	if run, ok := rd.runOf[k]; ok && run != l.Run {
		return rd.fail(rd.keyColumn("run"), ErrMalformed, "%s run %d was run %q, now %q", l.Agent, l.Ordinal, run, l.Run)
	}
	rd.lastStep[k], rd.runOf[k] = l.Step, l.Run
	at, err := rd.duration("at", l.At)
	if err != nil {
		return err
	}
	realAt, err := rd.duration("realAt", l.RealAt)
	if err != nil {
		return err
	}
	req, field, err := fromWireRequest(l.Request)
	if err != nil {
		return rd.fail(rd.fieldColumn(field), ErrMalformed, "%s: %v", field, err)
	}
	req.Agent, req.Run, req.Step = l.Agent, l.Run, l.Step
	rd.pending = &Exchange{Seq: l.Seq, Agent: l.Agent, Ordinal: l.Ordinal, Run: l.Run, Step: l.Step, Request: req,
		Timing: Timing{At: at, RealAt: realAt}, Line: rd.line}
	rd.state = wantResponse
	return nil
}

func (rd *reader) response(complete bool) error {
	var l responseLine
	if err := rd.strict(&l, complete); err != nil {
		return err
	}
	x := rd.pending
	switch {
	case l.Seq != x.Seq:
		return rd.fail(rd.keyColumn("seq"), ErrMalformed, "response seq is %d, but the request before it (line %d) is exchange %d", l.Seq, x.Line, x.Seq)
	case l.Agent != x.Agent:
		return rd.fail(rd.keyColumn("agent"), ErrMalformed, "response agent is %q, but its request's is %q", l.Agent, x.Agent)
	case l.Step != x.Step:
		return rd.fail(rd.keyColumn("step"), ErrMalformed, "response step is %d, but its request's is %d", l.Step, x.Step)
	case (l.Response == nil) == (l.Error == nil):
		return rd.fail(0, ErrMalformed, "a response line needs exactly one of response and error")
	}
	var err error
	if x.Timing.Duration, err = rd.duration("duration", l.Duration); err != nil {
		return err
	}
	if x.Timing.RealDuration, err = rd.duration("realDuration", l.RealDuration); err != nil {
		return err
	}
	if l.Error != nil {
		switch k := ErrorKind(l.Error.Kind); k {
		case ErrorProvider, ErrorCanceled, ErrorDeadline:
			x.Err = &RecordedError{Kind: k, Message: l.Error.Message}
		default:
			return rd.fail(rd.keyColumnAfter("error", "kind"), ErrMalformed,
				"error kind %q (want provider, canceled or deadline)", l.Error.Kind)
		}
	} else {
		x.Response = fromWireResponse(l.Response)
		x.FinishReason = l.Response.FinishReason
	}
	rd.c.Exchanges = append(rd.c.Exchanges, x)
	rd.pending = nil
	rd.state = wantRequestOrEnd
	return nil
}

func (rd *reader) end(complete bool) error {
	var l endLine
	if err := rd.strict(&l, complete); err != nil {
		return err
	}
	if l.Exchanges != len(rd.c.Exchanges) {
		return rd.fail(rd.keyColumn("exchanges"), ErrMalformed, "the end line counts %d exchange(s), the file has %d", l.Exchanges, len(rd.c.Exchanges))
	}
	rd.state = wantNothing
	return nil
}

func (rd *reader) duration(key, s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, rd.fail(rd.keyColumn(key), ErrMalformed, "%s is not a non-negative duration such as \"1.5s\": %q", key, s)
	}
	return d, nil
}
