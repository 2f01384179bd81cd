package core_test

import (
	"encoding/json"
	"math/rand/v2"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core"
)

// workArgCases are argument objects of the work tool, valid and invalid,
// hostile ones among them.
var workArgCases = []string{
	// Valid.
	`{"action":"list"}`, `{"action":"status","id":"w-1"}`, `{"action":"result","id":"w-1","timeout":"5s"}`,
	`{"action":"cancel","id":""}`, `{"action":"detach","id":"w_k3j5x2mq7t9a4bcd"}`,
	`{"action":"send","id":"w-1","message":"look at \u00e9t\u00e9 \ud83c\udf41"}`,
	`{"action":"result","id":"w-1","timeout":"not a duration"}`, // the schema says string; the action checks it
	`{"id":"w-1","message":"m","timeout":"1m","action":"send"}`, `  {"action" : "list"}  `, `{"\u0061ction":"list"}`,
	`{"action":"list","id":"` + strings.Repeat("x", 5000) + `"}`,
	// Missing action.
	`{}`, ``, `{"id":"w-1"}`, `{"Action":"list"}`, `{"action ":"list"}`,
	// Wrong types.
	`{"action":5}`, `{"action":null}`, `{"action":true}`, `{"action":["list"]}`, `{"action":{"list":1}}`,
	`{"action":"list","id":1}`, `{"action":"list","id":1.5e300}`, `{"action":"list","id":-0}`, `{"action":"list","id":null}`,
	`{"action":"list","timeout":30}`, `{"action":"list","message":{}}`, `{"action":"list","message":false}`,
	`{"action":"list","id":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`,
	`{"action":"list","id":` + strings.Repeat(`{"a":`, 70) + `1` + strings.Repeat("}", 70) + `}`,
	// Not one of the actions.
	`{"action":""}`, `{"action":"LIST"}`, `{"action":" list"}`, `{"action":"list\u0000"}`, `{"action":"l\u0456st"}`,
	`{"action":"start"}`, `{"action":"list\n"}`, `{"action":"` + strings.Repeat("a", 10000) + `"}`,
	// Properties the schema does not have.
	`{"action":"list","run_in_background":true}`, `{"action":"list","b":1,"a":2,"c":3}`,
	`{"action":"list","":1}`, `{"action":"list","'":1}`, `{"action":"list","\"":1}`, `{"action":"list","\\":1}`,
	`{"action":"list","\u0000":1}`, `{"action":"list","\u2028":1}`, `{"action":"list","\ud83d\ude00":1}`,
	`{"action":"list","__proto__":{}}`, `{"action":"list","constructor":1}`, `{"action":"list","\ufffd":1}`,
	`{"action":"list","` + strings.Repeat("k", 3000) + `":1}`,
	// Several problems at once.
	`{"id":1,"timeout":true,"message":{},"zz":1,"aa":2}`, `{"action":"nope","id":[],"extra":"x"}`,
	`{"action":5,"id":5,"timeout":5,"message":5}`,
	// Repeated keys: the last one counts, on both paths.
	`{"action":"list","action":5}`, `{"action":5,"action":"list"}`,
}

// randomWorkArgs draws an argument object from keys and values of every
// kind, known and unknown, well- and ill-typed.
func randomWorkArgs(r *rand.Rand) string {
	keys := []string{"action", "id", "timeout", "message", "run_in_background", "", "'", "ïd", "\u0000", "a\"b", "action "}
	values := []any{"list", "status", "result", "cancel", "detach", "send", "lost", "", "w-1", "5s",
		1.0, -2.5, true, false, nil, []any{}, []any{"list"}, map[string]any{}, map[string]any{"id": "w-1"}}
	obj := map[string]any{}
	for range r.IntN(6) {
		obj[keys[r.IntN(len(keys))]] = values[r.IntN(len(values))]
	}
	b, err := json.Marshal(obj)
	Expect(err).NotTo(HaveOccurred())
	return string(b)
}

var _ = Describe("The work tool's arguments", func() {
	check := func(args string) {
		engine, byHand, handled, err := core.WorkArgsBothWays(args)
		if err != nil {
			return // not a JSON object: refused before either check
		}
		Expect(handled).To(BeTrue(), "the hand check read %s", args)
		Expect(byHand).To(Equal(engine), "the two checks of %s agree", args)
	}

	It("are checked by hand with the general JSON Schema engine's decisions and words, on valid, invalid and hostile objects", func() {
		valid := 0
		for _, args := range workArgCases {
			check(args)
			if engine, _, _, err := core.WorkArgsBothWays(args); err == nil && engine == "" {
				valid++
			}
		}
		Expect(valid).To(Equal(12), "the eleven valid cases, and the repeated key whose last value is list")
		r := rand.New(rand.NewPCG(18, 1))
		for range 3000 {
			check(randomWorkArgs(r))
		}
	})

	It("are read straight from a plainly written valid document into the input the general path reads, and never from one it refuses", func() {
		plain := []string{`{"action":"list"}`, `{"action":"result","id":"w-1"}`, `{"action":"result","id":"w-1","timeout":"5s"}`,
			` { "id" : "w-2" ,	"action":"send", "message":"m" } `, `{"action":"status","id":"w-1","id":"w-2"}`}
		check := func(args string) (read bool) {
			direct, read, general, problem := core.WorkInputBothWays(args)
			if read {
				Expect(problem).To(BeEmpty(), "%s was read straight, but the general path refuses it", args)
				Expect(direct).To(Equal(general), "the two readings of %s", args)
			}
			return read
		}
		for _, args := range plain {
			Expect(check(args)).To(BeTrue(), "%s is read straight", args)
		}
		for _, args := range workArgCases {
			check(args)
		}
		r := rand.New(rand.NewPCG(18, 2))
		for range 3000 {
			check(randomWorkArgs(r))
		}
	})

	It("get the same error text every time, its problems and the names in each in order", func() {
		args := `{"zz":1,"action":"nope","id":2,"aa":true,"mm":null}`
		want := `input does not match the schema: at "/": additional properties 'aa', 'mm', 'zz' not allowed; ` +
			`at "/action": value must be one of 'list', 'status', 'result', 'cancel', 'detach', 'send'; at "/id": got number, want string`
		for range 50 {
			engine, byHand, _, err := core.WorkArgsBothWays(args)
			Expect(err).NotTo(HaveOccurred())
			Expect(engine).To(Equal(want))
			Expect(byHand).To(Equal(want))
		}
	})
})
