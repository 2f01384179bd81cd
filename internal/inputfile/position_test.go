package inputfile_test

import (
	"bytes"
	"encoding/json"
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
