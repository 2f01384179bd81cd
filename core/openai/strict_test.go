package openai_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/crux-sim/crux-sim/core/openai"
)

func TestStrictCompatibleAcceptsOnlyOpenAIsStrictSubset(t *testing.T) {
	cases := []struct {
		name   string
		schema string
		want   bool
	}{
		{"closed object, all required", `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":false}`, true},
		{"nested closed objects and arrays", `{"type":"object","properties":{"xs":{"type":"array","items":{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":false}}},"required":["xs"],"additionalProperties":false}`, true},
		{"nullable via type list and anyOf", `{"type":"object","properties":{"a":{"type":["string","null"]},"b":{"anyOf":[{"type":"string"},{"type":"null"}]}},"required":["a","b"],"additionalProperties":false}`, true},
		{"$defs and $ref", `{"type":"object","properties":{"p":{"$ref":"#/$defs/p"}},"required":["p"],"additionalProperties":false,"$defs":{"p":{"type":"object","properties":{},"required":[],"additionalProperties":false}}}`, true},
		{"an optional property", `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},"required":["a"],"additionalProperties":false}`, false},
		{"open object", `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`, false},
		{"additionalProperties true", `{"type":"object","properties":{},"additionalProperties":true}`, false},
		{"open nested object", `{"type":"object","properties":{"o":{"type":"object","properties":{}}},"required":["o"],"additionalProperties":false}`, false},
		{"unsupported keyword", `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":false,"minProperties":1}`, false},
		{"unsupported keyword deep", `{"type":"object","properties":{"a":{"not":{"type":"string"}}},"required":["a"],"additionalProperties":false}`, false},
		{"root not an object", `{"type":"string"}`, false},
		{"root is a boolean schema", `true`, false},
		{"not JSON", `{`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := openai.StrictCompatible(json.RawMessage(c.schema)); got != c.want {
				t.Errorf("StrictCompatible(%s) = %v, want %v", c.schema, got, c.want)
			}
		})
	}
}

func TestDefaultBackoffDoublesFromHalfASecondUpToEightSeconds(t *testing.T) {
	want := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 8 * time.Second, 8 * time.Second}
	for i, w := range want {
		if got := openai.DefaultBackoff(i + 1); got != w {
			t.Errorf("DefaultBackoff(%d) = %s, want %s", i+1, got, w)
		}
	}
}
