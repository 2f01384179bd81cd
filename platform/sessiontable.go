package platform

import "slices"

// sessionTable holds a value for each session id: an id that the
// platform's sequential ids give (session-n, n small: sessionNumber) at n
// in a slice, any other in a map made when one comes. A week of loops
// makes some 240 sessions: a map grown as they come rehashes them at each
// growth, and hashes an id at every look-up. The zero value of V is what
// an id holds until it is set.
type sessionTable[V any] struct {
	numbered []V
	named    map[string]V
}

// get returns what id holds.
func (t *sessionTable[V]) get(id string) V {
	n, ok := sessionNumber(id)
	if !ok {
		return t.named[id]
	}
	if n < len(t.numbered) {
		return t.numbered[n]
	}
	var zero V
	return zero
}

// set makes id hold v.
func (t *sessionTable[V]) set(id string, v V) {
	n, ok := sessionNumber(id)
	if !ok {
		if t.named == nil {
			t.named = map[string]V{}
		}
		t.named[id] = v
		return
	}
	if n >= len(t.numbered) {
		t.numbered = slices.Grow(t.numbered, n+1-len(t.numbered))
		t.numbered = t.numbered[:cap(t.numbered)]
	}
	t.numbered[n] = v
}

// maxNumbered bounds the sessions kept by number: an id source that
// numbers sessions from far off keeps them by name.
const maxNumbered = 1 << 12

// sessionNumber returns n for a session id "session-n" that spells n as
// strconv.Itoa does (no sign, no leading zero), with n below maxNumbered:
// the ids a platform's sequential ids give. Each such id has its own n,
// and every other id is kept by name.
func sessionNumber(id string) (int, bool) {
	const prefix = "session-"
	if len(id) <= len(prefix) || len(id) > len(prefix)+4 || id[:len(prefix)] != prefix {
		return 0, false
	}
	digits := id[len(prefix):]
	if digits[0] == '0' && len(digits) > 1 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(digits); i++ {
		c := digits[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, n < maxNumbered
}
