package scenarios_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/core/trace"
	. "github.com/crux-sim/crux-sim/scenarios"
)

// An in-background pattern remembers the last call arguments it read (a
// scenario's runs make the same calls seed after seed): what it says of a
// call is still what core.RunsInBackground says of its arguments, however
// the calls it reads come one after another.
var _ = Describe("A call's background flag, read again", func() {
	It("matches as core.RunsInBackground says, call after call", func() {
		args := []string{
			`{"query":"q","run_in_background":true}`,
			`{"query":"q"}`,
			`{"query":"q","run_in_background":true}`,
			`{"query":"q","run_in_background":true}`,
			`{"query":"q","run_in_background":false}`,
			`{"query":"q","run_in_background":true`, // not JSON
			`{"query":"q","run_in_background":true}`,
		}
		for _, want := range []bool{true, false} {
			p := Pattern{Kind: trace.Response, InBackground: Bool(want)}
			for _, a := range args {
				e := trace.Entry{Kind: trace.Response, Part: &trace.ResponsePart{Calls: []core.ToolCall{{Name: "research", Arguments: a}}}}
				Expect(p.Match(&trace.Trace{}, &e)).To(Equal(core.RunsInBackground(a) == want), "in-background %v of %s", want, a)
			}
		}
	})
})
