package core

import (
	"encoding/json"
	"strings"
)

// RunsInBackground reports whether a tool call's arguments ask to run in
// the background: they are a JSON object whose run_in_background member
// (the last one, if the key repeats) is the literal true, as the runtime
// reads them. A scenario's in-background pattern and crux-sim serve, which
// see only the call's argument string, ask it; matching an expectation
// asks it of every call of every response, once per pattern,
// so it reads the arguments in place, without decoding them into a map;
// the rare key written with escapes is decoded.
func RunsInBackground(args string) bool {
	if !json.Valid([]byte(args)) {
		return false
	}
	i := skipSpace(args, 0)
	if i >= len(args) || args[i] != '{' {
		return false
	}
	background := false
	i = skipSpace(args, i+1)
	for i < len(args) && args[i] == '"' {
		end := skipString(args, i)
		key := args[i+1 : end-1]
		if strings.IndexByte(key, '\\') >= 0 {
			// Decoded into a variable of its own, which goes to the
			// heap only here.
			var decoded string
			if err := json.Unmarshal([]byte(args[i:end]), &decoded); err != nil {
				return false
			}
			key = decoded
		}
		i = skipSpace(args, end)
		i = skipSpace(args, i+1) // the colon
		vend := skipValue(args, i)
		if key == BackgroundFlag {
			background = args[i:vend] == "true"
		}
		i = skipSpace(args, vend)
		if i < len(args) && args[i] == ',' {
			i = skipSpace(args, i+1)
		}
	}
	return background
}

// The skips read JSON that json.Valid accepted.

func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index past the string that starts at s[i].
func skipString(s string, i int) int {
	for i++; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return i
}

// skipValue returns the index past the value that starts at s[i].
func skipValue(s string, i int) int {
	depth := 0
	for i < len(s) {
		switch c := s[i]; {
		case c == '"':
			i = skipString(s, i)
		case c == '{' || c == '[':
			depth++
			i++
		case c == '}' || c == ']':
			if depth == 0 {
				return i
			}
			depth--
			i++
		case depth == 0 && (c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			return i
		default:
			i++
		}
		if depth == 0 && i > 0 && (s[i-1] == '"' || s[i-1] == '}' || s[i-1] == ']') {
			return i
		}
	}
	return i
}
