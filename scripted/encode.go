package scripted

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/crux-sim/crux-sim/internal/jsonenc"
)

// appendJSON appends the JSON encoding of v to b, exactly as json.Marshal
// would encode it, resolving symbolic references (WorkOf, ResultField)
// against the request as it goes (with no request, a reference is written
// as the text it holds). Scripts hold plain values and encoding them is on
// the path of every scripted step, so internal/jsonenc writes them without
// reflection and without first copying the value to resolve it; anything
// it declines is resolved the slow way and left to encoding/json.
func appendJSON(b []byte, h *history, v any) ([]byte, error) {
	start := len(b)
	out, ok, err := jsonenc.AppendWith(b, v, refEncoder{h})
	if err != nil {
		return nil, err
	}
	if ok {
		return out, nil
	}
	v, err = resolve(h, v)
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b[:start], raw...), nil
}

// refEncoder stands in what a script's symbolic references resolve to in
// the request.
type refEncoder struct{ h *history }

// Substitute implements jsonenc.Leaf.
func (e refEncoder) Substitute(v any) (any, bool, error) {
	switch t := v.(type) {
	case WorkOf, ResultField:
		plain, err := resolve(e.h, t)
		return plain, err == nil, err
	}
	return nil, false, nil
}

// encodedArgs is a call's arguments encoded ahead of the steps that make
// the call (Compile): the JSON text between its references, and the
// references (WorkOf, ResultField) in the order the text holds them. A
// call without references is its whole text. The zero value is a call
// that could not be encoded ahead, and is encoded at each step.
type encodedArgs struct {
	text []string // one more than refs
	refs []any
}

// refToken marks a reference's place while a call's arguments are encoded
// ahead; the place is the token quoted, with the reference's number after
// it.
const refToken = "scripted:reference:"

// compileArgs encodes v ahead, as appendJSON encodes it at a step, with
// each reference's place left for the step to fill. It declines what
// appendJSON leaves to encoding/json, and text that holds the token itself.
func compileArgs(v any) encodedArgs {
	var refs []any
	raw, ok, err := jsonenc.AppendWith(nil, v, holes{&refs})
	if !ok || err != nil {
		return encodedArgs{}
	}
	s := string(raw)
	if strings.Count(s, refToken) != len(refs) {
		return encodedArgs{}
	}
	text := make([]string, 0, len(refs)+1)
	for i := range refs {
		place := `"` + refToken + strconv.Itoa(i) + `"`
		j := strings.Index(s, place)
		if j < 0 {
			return encodedArgs{}
		}
		text, s = append(text, s[:j]), s[j+len(place):]
	}
	return encodedArgs{text: append(text, s), refs: refs}
}

// holes is the jsonenc.Leaf that compileArgs encodes with: it writes each
// reference as its numbered token and keeps it, to be resolved at a step.
type holes struct{ refs *[]any }

// Substitute implements jsonenc.Leaf.
func (h holes) Substitute(v any) (any, bool, error) {
	switch v.(type) {
	case WorkOf, ResultField:
		*h.refs = append(*h.refs, v)
		return refToken + strconv.Itoa(len(*h.refs)-1), true, nil
	}
	return nil, false, nil
}

// compiled reports whether the arguments were encoded ahead.
func (a *encodedArgs) compiled() bool { return a.text != nil }

// appendTo appends the arguments to b with their references resolved
// against the request, as appendJSON writes them: the same text, and the
// same error for the first reference that does not resolve. ok is false
// when a reference resolves to a value that appendJSON leaves to
// encoding/json; the caller encodes the arguments at the step then.
func (a *encodedArgs) appendTo(b []byte, h *history) (_ []byte, ok bool, _ error) {
	b = append(b, a.text[0]...)
	for i, ref := range a.refs {
		if w, isWork := ref.(WorkOf); isWork {
			// A Work id, written without boxing it in an any.
			id, err := w.resolve(h)
			if err != nil {
				return nil, false, err
			}
			if b, ok = jsonenc.AppendString(b, id); !ok {
				return b, false, nil
			}
		} else {
			plain, err := resolve(h, ref)
			if err != nil {
				return nil, false, err
			}
			if b, ok = jsonenc.Append(b, plain); !ok {
				return b, false, nil
			}
		}
		b = append(b, a.text[i+1]...)
	}
	return b, true, nil
}
