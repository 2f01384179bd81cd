package inputfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
)

// LineCol turns a byte offset into b, as encoding/json reports one (just
// past the problem), into a 1-based line and column.
func LineCol(b []byte, off int64) (line, col int) {
	off = min(off, int64(len(b)))
	if off > 0 {
		off--
	}
	line, col = 1, 1
	for _, c := range b[:off] {
		if c == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
}

// JSONPosition is where in b a JSON decoding error of it stands: the
// offset a syntax error or a value of the wrong type carries; for an
// unknown field (which encoding/json reports without one), the first place
// its name stands as a key; else at, the decoder's offset when it stopped.
// ok is false when there is none of these.
func JSONPosition(b []byte, err error, at int64) (line, col int, ok bool) {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		at = syn.Offset
	case errors.As(err, &typ):
		at = typ.Offset
	default:
		if name, found := strings.CutPrefix(err.Error(), "json: unknown field "); found {
			if i := keyAt(b, name); i >= 0 {
				at = int64(i) + 1
			}
		}
	}
	if at <= 0 {
		return 0, 0, false
	}
	line, col = LineCol(b, at)
	return line, col, true
}

// keyAt is the offset of the first quoted name in b that a colon follows,
// or -1.
func keyAt(b []byte, quoted string) int {
	for from := 0; ; {
		i := bytes.Index(b[from:], []byte(quoted))
		if i < 0 {
			return -1
		}
		i += from
		rest := bytes.TrimLeft(b[i+len(quoted):], " \t\r\n")
		if len(rest) > 0 && rest[0] == ':' {
			return i
		}
		from = i + len(quoted)
	}
}
