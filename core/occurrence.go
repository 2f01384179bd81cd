package core

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/crux-sim/crux-sim/internal/jsonenc"
)

// occurrences are the identities of the child calls a run has made at its
// current provider step, and what each produced. A child call, background
// or foreground, is identified by (owner, turn, tool-call id, tool key):
// the owner and the turn are the run and its step, so a repeated identity
// can only come from the same step (a provider response that repeats a
// call), and the record need live only as long as the step. The same
// identity with the same input replays the first call's outcome (the
// existing work.ref, or the foreground child's exact output) and runs
// nothing; with other input it is a conflict.
type occurrences struct {
	step  int
	calls []occurrence
	// byCall indexes calls by identity once a step holds more than a few,
	// so that a response with many calls is not checked in quadratic time.
	byCall map[occurrenceKey]int
}

type occurrenceKey struct{ callID, tool string }

// occurrenceScanLimit is how many calls a step scans before it indexes them.
const occurrenceScanLimit = 8

// An occurrence is 104 bytes: a background call's ref is kept as its id
// and target (the rest of a ref is the same for every Work; see newRef),
// its id where a foreground call's content is. Its input is kept as the
// call's arguments as they were written, not as a digest of it: a
// repeated identity almost always repeats them byte for byte, which says
// at once that its input is the same (see sameInput).
type occurrence struct {
	callID, tool string
	args         string // the call's arguments, as written
	background   bool
	text         string // background: the Work's id; foreground: the tool content, or
	err          error  // the model-facing error it ended with
	target       string // background: the Work's target
}

// ref is a background call's work.ref.
func (occ *occurrence) ref() WorkRef { return newRef(occ.text, occ.target) }

// seen returns the record of an identity at the step, nil for a new one,
// or a conflict error. The call is one of the tool pt, with its arguments
// as written and the input read from them.
func (o *occurrences) seen(step int, callID string, pt *preparedTool, args string, input any, background bool) (*occurrence, error) {
	if o.step != step {
		o.step, o.calls = step, o.calls[:0]
		clear(o.byCall)
	}
	if o.byCall != nil && len(o.calls) > occurrenceScanLimit {
		if i, ok := o.byCall[occurrenceKey{callID, pt.name}]; ok {
			return o.check(&o.calls[i], callID, pt, args, input, background)
		}
		return nil, nil
	}
	for i := range o.calls {
		if occ := &o.calls[i]; occ.callID == callID && occ.tool == pt.name {
			return o.check(occ, callID, pt, args, input, background)
		}
	}
	return nil, nil
}

// check compares a repeated identity's input and mode with its record.
func (*occurrences) check(occ *occurrence, callID string, pt *preparedTool, args string, input any, background bool) (*occurrence, error) {
	if !occ.sameInput(pt, args, input) {
		what := "ran " + pt.name + " in the foreground"
		if occ.background {
			what = "started background work " + occ.text
		}
		return nil, errConflict.with(fmt.Sprintf("tool call %s already %s with different input", callID, what))
	}
	if occ.background != background {
		return nil, errConflict.with(fmt.Sprintf(
			"tool call %s already called %s with the same input but run_in_background %t", callID, pt.name, !background))
	}
	return occ, nil
}

// sameInput reports whether a call of the record's tool pt, with its
// arguments as written and the input read from them, has the record's
// input: the same canonical JSON encoding. Arguments written byte for
// byte as the record's have; others (written in another order or
// spacing, or with another run_in_background) are read again, as the
// record's call read them, and the encodings compared.
func (occ *occurrence) sameInput(pt *preparedTool, args string, input any) bool {
	if args == occ.args {
		return true
	}
	first, err := decodeArgs(occ.args) // as its call decoded them, and validated
	if err != nil {
		return false
	}
	var a, b [512]byte
	was, _ := canonicalInput(a[:0], childInput(pt, first))
	is, _ := canonicalInput(b[:0], input)
	return bytes.Equal(was, is)
}

// reserve makes room for the calls of a step's response at once, when it
// has more than a few: a response of thousands of calls would otherwise
// copy the records (and rehash their index) again and again as they grow.
func (o *occurrences) reserve(step, calls int) {
	if calls <= manyCalls {
		return
	}
	if o.step != step {
		o.step, o.calls = step, o.calls[:0]
		clear(o.byCall)
	}
	if cap(o.calls)-len(o.calls) < calls {
		o.calls = slices.Grow(o.calls, calls)
	}
	if o.byCall == nil {
		o.byCall = make(map[occurrenceKey]int, calls)
	}
}

// record remembers what a new identity produced at the current step.
func (o *occurrences) record(occ occurrence) {
	o.calls = append(o.calls, occ)
	switch n := len(o.calls); {
	case n <= occurrenceScanLimit:
	case o.byCall == nil || len(o.byCall) == 0:
		if o.byCall == nil {
			o.byCall = make(map[occurrenceKey]int, n)
		}
		for i, c := range o.calls {
			o.byCall[occurrenceKey{c.callID, c.tool}] = i
		}
	default:
		o.byCall[occurrenceKey{occ.callID, occ.tool}] = n - 1
	}
}

// recordForeground remembers what a foreground call produced. It is kept
// out of line: its caller's frame is on the stack while the child runs.
//
//go:noinline
func (o *occurrences) recordForeground(call *ToolCall, tool string, content string, err error) {
	o.record(occurrence{callID: call.ID, tool: tool, args: call.Arguments, text: content, err: err})
}

// replay answers a repeated call identity with what its first call
// produced: the existing work.ref, or the foreground child's output.
func (occ *occurrence) replay() (string, *WorkRef, error) {
	if occ.background {
		ref := occ.ref()
		out, err := marshalRef(ref)
		return out, &ref, err
	}
	return occ.text, nil, occ.err
}

// canonicalInput appends a child call's input in its canonical JSON
// encoding (json.Marshal's, when it is not a plain value: plain false).
func canonicalInput(b []byte, input any) (canon []byte, plain bool) {
	if canon, ok := jsonenc.Append(b, input); ok {
		return canon, true
	}
	canon, _ = json.Marshal(input)
	return canon, false
}

// knownValidInput reports whether the child agent's input schema (nil:
// none) remembers a child call's input as valid, by its canonical
// encoding: the child's run, which its input reaches untouched, then need
// not encode it again to find so (see instance.inputValid).
func knownValidInput(input any, schema *Schema) bool {
	if schema == nil {
		return false
	}
	var scratch [512]byte // the canonical input is only looked up
	canon, plain := canonicalInput(scratch[:0], input)
	return plain && len(canon) <= maxValidMemoDoc && schema.knownValidDoc(canon)
}
