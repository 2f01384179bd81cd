package cassette

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/crux-sim/crux-sim/core"
)

// Reading errors, for errors.Is on a *FormatError.
var (
	// ErrNotCassette: the first line is not a cassette header.
	ErrNotCassette = errors.New("not a crux-sim cassette")
	// ErrVersion: the cassette's format version is not the one this
	// crux-sim reads.
	ErrVersion = errors.New("unsupported cassette version")
	// ErrTruncated: the file ends early: in the middle of a line (the
	// header's included), between a request and its response, or before
	// the end line. A recording that was interrupted, or a file cut short
	// in transit.
	ErrTruncated = errors.New("cassette is truncated")
	// ErrIncomplete: the header says the recording failed; the file was
	// kept for diagnosis (RecordOptions.Partial) and cannot be replayed.
	ErrIncomplete = errors.New("cassette is an incomplete recording")
	// ErrTooLarge: the file is larger than ReadOptions.MaxBytes.
	ErrTooLarge = errors.New("cassette is too large")
	// ErrMalformed: a line is not what the format allows at that place: bad
	// JSON, an unknown or misspelt key, a wrong type, nesting past
	// ReadOptions.MaxDepth, a value out of range, exchanges out of order.
	// Usually a hand edit gone wrong.
	ErrMalformed = errors.New("malformed cassette")
)

// Reading limits, the defaults of ReadOptions.
const (
	// DefaultMaxBytes is the largest cassette read: a thousand-step run
	// records in well under a megabyte.
	DefaultMaxBytes int64 = 64 << 20
	// DefaultMaxDepth is the deepest JSON nesting a line may have.
	DefaultMaxDepth = 64
)

// ReadOptions bound what a reader accepts; the zero value has the defaults.
type ReadOptions struct {
	// MaxBytes is the largest file read; default DefaultMaxBytes.
	MaxBytes int64
	// MaxDepth is the deepest JSON nesting of a line; default
	// DefaultMaxDepth.
	MaxDepth int
}

func (o ReadOptions) withDefaults() ReadOptions {
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxDepth <= 0 {
		o.MaxDepth = DefaultMaxDepth
	}
	return o
}

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

// ReadFile reads the cassette at path, which must be a regular file (not
// a device, a FIFO or a directory), within the options' limits.
func ReadFile(path string, opts ...ReadOptions) (*Cassette, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("cassette: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("cassette: %s is not a regular file (%s)", path, fi.Mode().Type())
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cassette: %w", err)
	}
	defer f.Close()
	return Read(f, path, opts...)
}

// Read reads a cassette; name is used in errors and divergence reports.
// Every problem is a *FormatError naming the line (and the column where one
// is to blame) and wrapping ErrNotCassette, ErrVersion, ErrTruncated,
// ErrIncomplete, ErrTooLarge or ErrMalformed. At most one ReadOptions is
// used.
func Read(r io.Reader, name string, opts ...ReadOptions) (*Cassette, error) {
	var o ReadOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	o = o.withDefaults()
	rd := &reader{file: name, c: &Cassette{File: name}, opts: o, runs: map[queueKey]*readRun{}}
	lim := &io.LimitedReader{R: r, N: o.MaxBytes + 1}
	if err := rd.read(bufio.NewReader(lim), lim); err != nil {
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
	opts ReadOptions

	line    int
	raw     []byte
	col0    int // bytes cut from the start of the line (a byte order mark)
	state   int // what the next line must be
	pending *Exchange
	runs    map[queueKey]*readRun
}

// readRun rebuilds one run's requests from what each line adds.
type readRun struct {
	lastStep int
	run      string
	hist     []core.Message // the previous request's messages, with room to grow
	setup    core.Request   // its model, system, tools and output
	setupEnc []byte         // its setup, encoded, for the digest
	dig      digester
}

const (
	wantHeader = iota
	wantRequestOrEnd
	wantResponse
	wantNothing
)

var byteOrderMark = []byte("\xef\xbb\xbf")

func (rd *reader) fail(col int, sentinel error, format string, args ...any) error {
	if col > 0 {
		col += rd.col0
	}
	return &FormatError{File: rd.file, Line: rd.line, Column: col, Err: fmt.Errorf("%w: %s", sentinel, fmt.Sprintf(format, args...))}
}

func (rd *reader) read(br *bufio.Reader, lim *io.LimitedReader) error {
	for {
		raw, err := br.ReadBytes('\n')
		if lim.N <= 0 {
			return &FormatError{File: rd.file, Err: fmt.Errorf("%w: the file is larger than the limit of %s; raise ReadOptions.MaxBytes (crux-sim: --max-cassette-size) to read it",
				ErrTooLarge, byteSize(rd.opts.MaxBytes))}
		}
		if len(raw) == 0 && errors.Is(err, io.EOF) {
			break
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return &FormatError{File: rd.file, Line: rd.line + 1, Err: fmt.Errorf("reading: %w", err)}
		}
		rd.line++
		complete := err == nil
		rd.raw, rd.col0 = bytes.TrimRight(raw, "\r\n"), 0
		if rd.line == 1 && bytes.HasPrefix(rd.raw, byteOrderMark) {
			// Editors on some systems start UTF-8 files with a byte order
			// mark; it is not part of the header.
			rd.raw, rd.col0 = rd.raw[len(byteOrderMark):], len(byteOrderMark)
		}
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

// byteSize renders a limit for an error message.
func byteSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// headerStart is how every header begins; a first line cut short that is a
// piece of it, or that names the format, is a truncated cassette rather
// than some other file.
const headerStart = `{"kind":"header","format":"crux-sim-cassette"`

// startsLikeHeader reports whether a first line, whole or cut short, is a
// cassette header's: a piece of how every header begins, or a line that
// names the format.
func startsLikeHeader(line []byte) bool {
	return strings.HasPrefix(headerStart, string(line)) || bytes.HasPrefix(line, []byte(`{"kind":"header"`)) ||
		bytes.Contains(line, []byte(`"`+Format+`"`))
}

// StartsLikeCassette reports whether the first bytes of a file are a
// cassette's, by the rule the reader tells a truncated cassette from
// another file with: its first line (or as much of it as head holds) starts
// like a header, whole or cut short, or names the format. A first line
// shorter than {"kind" is too little to tell and is not taken for one (a
// YAML file may open with a lone "{").
func StartsLikeCassette(head []byte) bool {
	if i := bytes.IndexByte(head, '\n'); i >= 0 {
		head = head[:i]
	}
	return len(head) >= len(`{"kind"`) && startsLikeHeader(head)
}

func (rd *reader) parse(complete bool) error {
	if err := checkDepth(rd.raw, rd.opts.MaxDepth); err != nil {
		var de *depthError
		errors.As(err, &de)
		return rd.fail(de.offset+1, ErrMalformed, "%v", err)
	}
	kind, hasKind, err := probeKind(rd.raw)
	if err != nil {
		var v any
		if uerr := json.Unmarshal(rd.raw, &v); uerr != nil {
			err = uerr // its offsets are the ones the rest of the reader reports
		}
		if rd.state == wantHeader {
			if !complete && cutShort(rd.raw) && startsLikeHeader(rd.raw) {
				return rd.fail(len(rd.raw)+1, ErrTruncated, "%s", rd.cutLine())
			}
			return rd.fail(0, ErrNotCassette, "the first line is not a JSON cassette header")
		}
		return rd.jsonError(err, complete)
	}
	if !hasKind {
		if rd.state == wantHeader {
			return rd.fail(0, ErrNotCassette, "the first line is not a cassette header (it has no \"kind\" key)")
		}
		if k := rd.foldedKey("kind"); k != "" {
			return rd.fail(rd.keyColumn(k), ErrMalformed, "unknown key %q (keys are case-sensitive: did you mean \"kind\"?)", k)
		}
		return rd.fail(0, ErrMalformed, "the line has no \"kind\" key")
	}
	if rd.state == wantNothing {
		return rd.fail(0, ErrMalformed, "a %q line follows the end line", kind)
	}
	if rd.state == wantHeader {
		if kind != kindHeader {
			return rd.fail(0, ErrNotCassette, "the first line is not a cassette header")
		}
		return rd.header(complete)
	}
	switch kind {
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
	return rd.fail(rd.keyColumn("kind"), ErrMalformed, "unknown line kind %q (want request, response or end)", kind)
}

// cutShort reports whether raw is the start of a JSON value that ends too
// early.
func cutShort(raw []byte) bool {
	var v any
	err := json.Unmarshal(raw, &v)
	var syn *json.SyntaxError
	return errors.As(err, &syn) && syn.Offset >= int64(len(raw)) || errors.Is(err, io.ErrUnexpectedEOF)
}

// foldedKey finds a top-level key that equals want but for case.
func (rd *reader) foldedKey(want string) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(rd.raw, &m) != nil {
		return ""
	}
	for k := range m {
		if strings.EqualFold(k, want) {
			return k
		}
	}
	return ""
}

// strict decodes the line into v, refusing unknown, misspelt (in any
// case) and repeated keys, so that a typo in a hand edit is caught rather
// than silently ignored.
func (rd *reader) strict(v any, complete bool) error {
	// A syntax error is left to the decoder below, whose offsets are the
	// ones every other error reports.
	if err := checkKeys(rd.raw, reflect.TypeOf(v)); err != nil {
		var ke *keyError
		if errors.As(err, &ke) {
			return rd.fail(ke.offset+1, ErrMalformed, "%s", ke.msg)
		}
	}
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
			return rd.fail(int(syn.Offset)+1, ErrTruncated, "%s: %v", rd.cutLine(), syn)
		}
		return rd.fail(int(syn.Offset), ErrMalformed, "invalid JSON: %v", syn)
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		if !complete {
			return rd.fail(len(rd.raw)+1, ErrTruncated, "%s", rd.cutLine())
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

func (rd *reader) cutLine() string {
	if rd.state == wantHeader {
		return "the header line is cut short; the recording was interrupted or the file was cut short"
	}
	return "the last line is cut short"
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

func (rd *reader) header(complete bool) error {
	var h headerLine
	if err := rd.strictHeader(&h, complete); err != nil {
		return err
	}
	if h.Format != Format {
		return rd.fail(rd.keyColumn("format"), ErrNotCassette, "format is %q, want %q", h.Format, Format)
	}
	switch {
	case h.Version > Version:
		return rd.fail(rd.keyColumn("version"), ErrVersion, "version %d is newer than this crux-sim reads (%d); upgrade crux-sim or re-record", h.Version, Version)
	case h.Version == 1:
		return rd.fail(rd.keyColumn("version"), ErrVersion, "version 1 is older than this crux-sim reads (%d): version 1 cassettes re-encoded structured output and named their scenario by path; re-record it with this crux-sim", Version)
	case h.Version != Version:
		return rd.fail(rd.keyColumn("version"), ErrVersion, "version %d is not one this crux-sim reads (%d)", h.Version, Version)
	}
	if h.Incomplete != "" {
		return rd.fail(rd.keyColumn("incomplete"), ErrIncomplete, "the recording failed (%s) and this file keeps what it recorded before that; it cannot be replayed: record again", h.Incomplete)
	}
	if h.ScenarioSource != "" && h.ScenarioDigest != Digest([]byte(h.ScenarioSource)) {
		return rd.fail(rd.keyColumn("scenarioDigest"), ErrMalformed, "the embedded scenarioSource does not match scenarioDigest: the scenario was edited after the recording")
	}
	if h.ScenarioDigest != "" && !validDigest(h.ScenarioDigest) {
		return rd.fail(rd.keyColumn("scenarioDigest"), ErrMalformed, "scenarioDigest %q is not \"sha256:\" and 64 hex digits", h.ScenarioDigest)
	}
	hd := Header{Version: h.Version, CruxSim: h.CruxSim, Scenario: h.Scenario, ScenarioSource: h.ScenarioSource, ScenarioDigest: h.ScenarioDigest,
		Seed: h.Seed, Model: h.Model, BaseURL: h.BaseURL}
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

var digestForm = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

func validDigest(s string) bool { return digestForm.MatchString(s) }

// strictHeader decodes the header, reading the version first so that a
// file of another version, with keys this version does not know, is
// reported as a version problem, not as an unknown key.
func (rd *reader) strictHeader(h *headerLine, complete bool) error {
	var loose struct {
		Format  string `json:"format"`
		Version int    `json:"version"`
	}
	if err := json.Unmarshal(rd.raw, &loose); err == nil && loose.Format == Format && loose.Version != Version {
		h.Format, h.Version = loose.Format, loose.Version
		return nil
	}
	return rd.strict(h, complete)
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
	case !validDigest(l.Digest):
		return rd.fail(rd.keyColumn("digest"), ErrMalformed, "digest %q is not \"sha256:\" and 64 hex digits", l.Digest)
	}
	k := queueKey{l.Agent, l.Ordinal}
	run := rd.runs[k]
	if run != nil && l.Step <= run.lastStep {
		return rd.fail(rd.keyColumn("step"), ErrMalformed, "step %d of %s run %d follows its step %d; steps of a run only go up", l.Step, l.Agent, l.Ordinal, run.lastStep)
	}
	if run != nil && run.run != l.Run {
		return rd.fail(rd.keyColumn("run"), ErrMalformed, "%s run %d was run %q, now %q", l.Agent, l.Ordinal, run.run, l.Run)
	}
	w := l.Request
	switch {
	case run == nil && w.Prior > 0:
		return rd.fail(rd.keyColumn("prior"), ErrMalformed, "prior is %d, but this is the first request of %s run %d", w.Prior, l.Agent, l.Ordinal)
	case run == nil && w.Inherit:
		return rd.fail(rd.keyColumn("inherit"), ErrMalformed, "inherit is set, but this is the first request of %s run %d", l.Agent, l.Ordinal)
	case w.Prior < 0 || run != nil && w.Prior > len(run.hist):
		return rd.fail(rd.keyColumn("prior"), ErrMalformed, "prior is %d, but the run's previous request had %d message(s)", w.Prior, len(run.hist))
	case w.Inherit && (w.Model != "" || w.System != "" || len(w.Tools) > 0 || len(w.Output) > 0):
		return rd.fail(rd.keyColumn("inherit"), ErrMalformed, "inherit is set, so model, system, tools and output belong to the run's previous request and must be absent")
	}
	if run == nil {
		run = &readRun{}
		rd.runs[k] = run
	}
	run.lastStep, run.run = l.Step, l.Run
	at, err := rd.duration("at", l.At)
	if err != nil {
		return err
	}
	realAt, err := rd.duration("realAt", l.RealAt)
	if err != nil {
		return err
	}
	req, err := rd.rebuild(run, w)
	if err != nil {
		return err
	}
	req.Agent, req.Run, req.Step = l.Agent, l.Run, l.Step
	x := &Exchange{Seq: l.Seq, Agent: l.Agent, Ordinal: l.Ordinal, Run: l.Run, Step: l.Step, Request: req, Digest: l.Digest,
		Timing: Timing{At: at, RealAt: realAt}, Line: rd.line}
	x.Edited = rd.digest(run, w) != l.Digest
	rd.pending = x
	rd.state = wantResponse
	return nil
}

// rebuild makes the whole request from the run's previous one and what
// this line adds. The history is appended to in place, as the runtime
// does, so that every request of a run shares one array and reading stays
// linear in the run's length.
func (rd *reader) rebuild(run *readRun, w wireRequest) (*core.Request, error) {
	req := &core.Request{}
	if w.Inherit {
		req.Model, req.System, req.Tools, req.Output = run.setup.Model, run.setup.System, run.setup.Tools, run.setup.Output
	} else {
		if field, err := fromWireSetup(wireSetup{Model: w.Model, System: w.System, Tools: w.Tools, Output: w.Output}, req); err != nil {
			return nil, rd.fail(rd.fieldColumn(field), ErrMalformed, "%s: %v", field, err)
		}
		run.setup = core.Request{Model: req.Model, System: req.System, Tools: req.Tools, Output: req.Output}
		b, err := encodeJSON(wireSetup{Model: w.Model, System: w.System, Tools: w.Tools, Output: w.Output})
		if err != nil {
			return nil, rd.fail(0, ErrMalformed, "request: %v", err)
		}
		run.setupEnc = b
	}
	st, field, err := fromWireStatus(w.Status)
	if err != nil {
		return nil, rd.fail(rd.fieldColumn(field), ErrMalformed, "%s: %v", field, err)
	}
	req.Status = st
	hist := run.hist
	if w.Prior < len(hist) {
		// The history was rewritten: the kept part is copied, so that the
		// run's earlier requests keep theirs.
		hist = slices.Clip(hist[:w.Prior])
	}
	for i, m := range w.Messages {
		msg, err := fromWireMessage(m)
		if err != nil {
			field := fmt.Sprintf("request.messages[%d].role", i)
			return nil, rd.fail(rd.fieldColumn(field), ErrMalformed, "%s: %v", field, err)
		}
		hist = append(hist, msg)
	}
	run.hist = hist
	req.Messages = hist[:len(hist):len(hist)]
	return req, nil
}

// digest computes the digest of the request just rebuilt, as the writer
// did, to tell whether the file still holds what was recorded.
func (rd *reader) digest(run *readRun, w wireRequest) string {
	status, _ := encodeJSON(w.Status)
	return run.dig.digest(w.Prior, len(run.hist), func(i int) []byte {
		var m wireMessage
		if i >= w.Prior {
			m = w.Messages[i-w.Prior]
		} else {
			m = toWireMessage(run.hist[i], nil)
		}
		b, _ := encodeJSON(m)
		return b
	}, run.setupEnc, status)
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
