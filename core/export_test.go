package core

import (
	"io"
	"slices"
)

// SendIdentityRecords returns, for the specs, the identity record of every
// accepted send: what the runtime keeps to answer a repeated tool-call
// identity. The seed allows a digest of the message there, never its text.
func SendIdentityRecords(rt *Runtime) []any {
	rt.registry.mu.Lock()
	defer rt.registry.mu.Unlock()
	out := make([]any, 0, len(rt.registry.sends))
	for _, rec := range rt.registry.sends {
		out = append(out, rec)
	}
	return out
}

// SetIDEntropy makes RandomIDs read its bits from r, for the specs, and
// returns the function that puts crypto/rand back. Bits read ahead from the
// previous source are dropped, so the next id draws from r.
func SetIDEntropy(r io.Reader) (restore func()) {
	e := &idEntropy
	e.mu.Lock()
	defer e.mu.Unlock()
	prev := e.source
	e.source, e.off = r, len(e.buf)
	return func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.source, e.off = prev, len(e.buf)
	}
}

// WorkArgsBothWays checks the work tool's arguments, a JSON document, by
// the general JSON Schema engine and by hand, and returns both errors'
// text ("" when valid); byHand says the hand check read the arguments at
// all (rather than handing them to the engine).
func WorkArgsBothWays(args string) (engine, byHand string, handled bool, err error) {
	v, err := decodeArgs(args)
	if err != nil {
		return "", "", false, err
	}
	general := &Schema{raw: workToolSchema.raw, doc: workToolSchema.doc, compiled: workToolSchema.compiled}
	text := func(err error) string {
		if err == nil {
			return ""
		}
		return err.Error()
	}
	_, handled = workToolSchema.flat.problems(v)
	return text(general.Validate(v)), text(workToolSchema.Validate(v)), handled, nil
}

// WorkInputBothWays reads the work tool's arguments, a JSON document,
// straight from the document (read says it did) and the general way
// (decoded, checked by the schema, then read from the map; problem is the
// check's error text, "" when valid).
func WorkInputBothWays(args string) (direct WorkInput, read bool, general WorkInput, problem string) {
	direct, read = readWorkInput(workToolSchema, args, new(workValues))
	v, err := decodeArgs(args)
	if err != nil {
		return direct, read, WorkInput{}, err.Error()
	}
	if err := workToolSchema.Validate(v); err != nil {
		return direct, read, WorkInput{}, err.Error()
	}
	return direct, read, workInputOf(v.(map[string]any), new(workValues)), ""
}

// BuildStatus is the status block a request carries for the rows the
// registry sampled out of total attached items.
func BuildStatus(rows []StatusRow, total int) *StatusBlock {
	blk := &StatusBlock{}
	fillStatus(blk, rows, total, nil, false)
	return blk
}

// MarshalStatus is marshalStatus, for the allocation specs.
func MarshalStatus(s WorkStatus) (string, error) { return marshalStatus(s) }

// IDTextWritten returns, for the specs, how many bytes of id text a
// sequential source has written into its current room, and the room's
// size: a source that counts an id without writing it leaves both as
// they were.
func IDTextWritten(s *SequentialIDs) (written, room int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return int(s.textLen), int(s.textCap)
}

// DecodeJSON is the runtime's decoder of tool arguments and structured
// outputs, for the specs.
func DecodeJSON(s string) (any, error) { return decodeJSON(s) }

// ResetSharedSleeps empties the process's shared table of sleep reasons,
// for the specs of a runtime's sleeps.
func ResetSharedSleeps() {
	sharedSleeps.mu.Lock()
	defer sharedSleeps.mu.Unlock()
	sharedSleeps.list.Store(nil)
}

// OccurrenceInputBothWays compares the input of a recorded child call,
// by its arguments as written, with a repeated call's: as the record does
// (same), and the general way (general): both documents decoded and read
// as the child's input, and their canonical encodings compared, the
// digest of which the record kept before. wrapped says the child's input
// is not an object, and is wrapped as {input}.
func OccurrenceInputBothWays(recorded, args string, wrapped bool) (same, general bool, err error) {
	pt := &preparedTool{name: "research", hasInput: true, wrapped: wrapped}
	input := func(doc string) (any, error) {
		v, err := decodeArgs(doc)
		if err != nil {
			return nil, err
		}
		return childInput(pt, v), nil
	}
	was, err := input(recorded)
	if err != nil {
		return false, false, err
	}
	is, err := input(args)
	if err != nil {
		return false, false, err
	}
	a, _ := canonicalInput(nil, was)
	b, _ := canonicalInput(nil, is)
	occ := occurrence{callID: "call-1", tool: pt.name, args: recorded}
	return occ.sameInput(pt, args, is), string(a) == string(b), nil
}

// BuildStatusBothWays builds the status block of rows as a request does
// when the registry has read every row's id and label as single-line
// already (fast: told so when they are, as each Work's names are read
// once), and the general way, each id and label made single-line.
func BuildStatusBothWays(rows []StatusRow, total int) (fast, general *StatusBlock) {
	known := true
	for _, r := range rows {
		known = known && singleLine(r.ID) && singleLine(r.Label)
	}
	fast, general = &StatusBlock{}, &StatusBlock{}
	fillStatus(fast, slices.Clone(rows), total, nil, known)
	fillStatus(general, slices.Clone(rows), total, nil, false)
	return fast, general
}
