package core_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/crux-sim/crux-sim/core"
)

// decodedBackground is the rule decoded the slow way: the arguments
// decode as a JSON object and its run_in_background member is true.
func decodedBackground(args string) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal([]byte(args), &m) == nil && string(m[core.BackgroundFlag]) == "true"
}

// RunsInBackground reads arguments in place as decoding them reads them:
// on random objects (nested values, whitespace, repeated and escaped keys,
// true written in other ways), on invalid JSON and on values that are not
// objects.
func TestRunsInBackgroundReadsArgumentsAsDecodingThemDoes(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 18))
	ws := func() string { return []string{"", " ", "\n\t ", "\r\n"}[rng.IntN(4)] }
	var key func() string
	var value func(depth int) string
	value = func(depth int) string {
		switch k := rng.IntN(10); {
		case k == 0 && depth > 0:
			var items []string
			for range rng.IntN(3) {
				items = append(items, ws()+value(depth-1)+ws())
			}
			return "[" + strings.Join(items, ",") + "]"
		case k == 1 && depth > 0:
			var members []string
			for range rng.IntN(3) {
				members = append(members, ws()+key()+ws()+":"+ws()+value(depth-1)+ws())
			}
			return "{" + strings.Join(members, ",") + "}"
		case k == 2:
			return `"a \"quoted\" \\ }] string, with {run_in_background:true}"`
		default:
			return []string{"true", "false", "null", "0", "-1.5e3", `"true"`, `""`, "1"}[rng.IntN(8)]
		}
	}
	key = func() string {
		return []string{`"run_in_background"`, `"run_in_background"`, `"run_in_backgr\u006fund"`, `"Run_In_Background"`, `"question"`, `"n"`, `""`, `"run_in_background "`}[rng.IntN(8)]
	}
	object := func() string {
		var members []string
		for range rng.IntN(5) {
			members = append(members, ws()+key()+ws()+":"+ws()+value(2)+ws())
		}
		return ws() + "{" + strings.Join(members, ",") + "}" + ws()
	}
	cases := []string{"", "{", "{}", "null", "true", "[]", `"x"`, `{"run_in_background":true`, `{"run_in_background":true}x`,
		`{"run_in_background":true,}`, `{"run_in_background": true }`, `{"run_in_background":tru}`, `[{"run_in_background":true}]`}
	for range 5000 {
		cases = append(cases, object())
	}
	for i := range 300 { // broken objects: cut short
		o := object()
		cases = append(cases, o[:rng.IntN(len(o)+1)], fmt.Sprint(i))
	}
	seen := map[bool]int{}
	for _, args := range cases {
		got, want := core.RunsInBackground(args), decodedBackground(args)
		if got != want {
			t.Fatalf("RunsInBackground(%s) = %v; decoding says %v", args, got, want)
		}
		seen[want]++
	}
	if seen[true] < 100 || seen[false] < 100 {
		t.Fatalf("the cases decode true %d times and false %d times; both should be common", seen[true], seen[false])
	}
}
