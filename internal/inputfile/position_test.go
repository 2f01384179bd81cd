package inputfile_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/crux-sim/crux-sim/internal/inputfile"
)

func TestAJSONErrorIsPlacedAtTheLineAndColumnOfTheProblem(t *testing.T) {
	for _, c := range []struct {
		name, doc string
		line, col int
	}{
		{"a missing comma", "{\n  \"a\": 1\n  \"b\": 2\n}\n", 3, 3},
		{"a value of the wrong type", "{\n  \"seed\": \"three\"\n}\n", 2, 17},
		{"an unknown field", "{\n  \"a\": 1,\n  \"zz\": 2\n}\n", 3, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			var v struct {
				A    int `json:"a"`
				B    int `json:"b"`
				Seed int `json:"seed"`
			}
			dec := json.NewDecoder(bytes.NewReader([]byte(c.doc)))
			dec.DisallowUnknownFields()
			err := dec.Decode(&v)
			if err == nil {
				t.Fatal("the document decoded")
			}
			line, col, ok := inputfile.JSONPosition([]byte(c.doc), err, dec.InputOffset())
			if !ok || line != c.line || col != c.col {
				t.Errorf("%v: at %d:%d (ok %v), want %d:%d", err, line, col, ok, c.line, c.col)
			}
		})
	}
}

// A file crux-sim wrote decodes strictly, and a failure is placed where it
// stands: a file cut short at its end, an unknown key where it is, and
// more after the value where that starts.
func TestDecodeJSONPlacesEveryFailureOfAFile(t *testing.T) {
	type doc struct {
		A int `json:"a"`
		B int `json:"b"`
	}
	for _, c := range []struct {
		name, doc string
		line, col int
		says      string
	}{
		{"a file cut short", "{\n  \"a\": 1,\n  \"b\"", 3, 6, "ends in the middle"},
		{"a file cut after a comma", "{\n  \"a\": 1,\n", 3, 1, "ends in the middle"},
		{"an unknown key", "{\n  \"a\": 1,\n  \"c\": 2\n}\n", 3, 3, "unknown field"},
		{"a second value", "{\"a\": 1}\n{\"b\": 2}\n", 2, 1, "more follows"},
		{"a syntax error", "{\"a\": 1 \"b\": 2}", 1, 9, "invalid character"},
		{"an empty file", "", 0, 0, "empty"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var v doc
			line, col, err := inputfile.DecodeJSON([]byte(c.doc), &v)
			if err == nil {
				t.Fatal("the document decoded")
			}
			if line != c.line || col != c.col || !strings.Contains(err.Error(), c.says) {
				t.Errorf("%v at %d:%d, want %q at %d:%d", err, line, col, c.says, c.line, c.col)
			}
		})
	}
	var v doc
	if line, _, err := inputfile.DecodeJSON([]byte("{\"a\": 1, \"b\": 2}\n\n"), &v); err != nil || line != 0 || v.A != 1 || v.B != 2 {
		t.Errorf("a good file with a trailing newline: %v at line %d, %+v", err, line, v)
	}
}
