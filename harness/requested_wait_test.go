package harness_test

import (
	"testing"
	"time"

	"github.com/crux-sim/crux-sim/harness"
)

// The caps invariant reads a result call's timeout where it stands, as the
// runtime's decoder reads it: the last of repeated keys, an escaped value
// decoded, and none from a key that only a value spells.
func TestTheTimeoutAResultCallAsksForIsReadAsTheRuntimeReadsIt(t *testing.T) {
	for _, c := range []struct {
		args  string
		want  time.Duration
		asked bool
	}{
		{`{"action":"result","id":"w-1","timeout":"1s"}`, time.Second, true},
		{`{"action":"result","id":"w-1", "timeout" : "250ms" }`, 250 * time.Millisecond, true},
		{`{"action":"result","id":"w-1"}`, 0, false},
		{`{"action":"result","id":"timeout"}`, 0, false},
		{`{"action":"result","id":"w-1","timeout":"1s","timeout":"3s"}`, 3 * time.Second, true},
		{`{"action":"result","id":"w-1","timeout":"2\u0073"}`, 2 * time.Second, true},
		{`{"action":"result","id":"a\"timeout\":\"9s","timeout":"1 m"}`, time.Minute, true},
		{`{"action":"result","id":"w-1","timeout":null}`, 0, false},
		{`{"action":"result","id":"w-1","timeout":"soon"}`, 0, false},
	} {
		got, asked := harness.RequestedWait(c.args)
		if got != c.want || asked != c.asked {
			t.Errorf("%s: %v, %v; want %v, %v", c.args, got, asked, c.want, c.asked)
		}
	}
}
