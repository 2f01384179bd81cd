package scripted

import (
	"encoding/json"

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
