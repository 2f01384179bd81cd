package inputfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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

// DecodeJSON decodes b, a file's one JSON value, into v as strictly as a
// file crux-sim wrote should read: an unknown field, and anything but
// white space after the value, are errors. A failure has the line and
// column to blame where there is one (line 0 when there is none): a file
// cut short is placed at its end, since that is where it stops making
// sense.
func DecodeJSON(b []byte, v any) (line, col int, err error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err = dec.Decode(v); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			if len(b) == 0 {
				return 0, 0, errors.New("the file is empty")
			}
			line, col = endOf(b)
			return line, col, fmt.Errorf("the file ends in the middle of its JSON value: %w", io.ErrUnexpectedEOF)
		}
		line, col, _ = JSONPosition(b, err, dec.InputOffset())
		return line, col, err
	}
	if rest := bytes.TrimLeft(b[dec.InputOffset():], " \t\r\n"); len(rest) > 0 {
		line, col = LineCol(b, int64(len(b)-len(rest))+1)
		return line, col, errors.New("more follows the JSON value; a file holds one")
	}
	return 0, 0, nil
}

// endOf is the line and column just past the last byte of b.
func endOf(b []byte) (line, col int) {
	last := bytes.LastIndexByte(b, '\n')
	return 1 + bytes.Count(b, []byte{'\n'}), len(b) - last
}
