package scenarios_test

import (
	"reflect"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core/trace"
	. "github.com/crux-sim/crux-sim/scenarios"
)

// set gives a field of a Pattern a value that no entry of an empty trace
// has.
func set(f reflect.Value) {
	switch v := f.Addr().Interface().(type) {
	case *string:
		*v = "zz-unlikely"
	case *int:
		*v = 99
	case *bool:
		*v = true
	case **bool:
		*v = Bool(true)
	case *[]string:
		*v = []string{"zz-unlikely"}
	case **RowPattern:
		*v = &RowPattern{State: "running"}
	case *Ref:
		*v = WorkOf("zz-unlikely")
	case **time.Duration:
		d := 99 * time.Hour
		*v = &d
	default:
		Fail("the spec does not know how to set a " + f.Type().String())
	}
}

var _ = Describe("Pattern fields", func() {
	It("every field of Pattern is one field of the pattern table: set alone, it is shown, and an entry that lacks it mismatches with a reason", func() {
		typ := reflect.TypeFor[Pattern]()
		Expect(typ.NumField()).To(BeNumerically(">", 20))
		empty := &trace.Trace{}
		// A field must tell one of these apart from a match: an entry
		// that has nothing, or one that has what a negative field (no
		// status, tools-exclude) rules out.
		bare := &trace.Entry{Kind: trace.Request}
		full := &trace.Entry{Kind: trace.Request, At: 100 * time.Hour, Part: &trace.RequestPart{Tools: []string{"zz-unlikely"}, Status: []string{"- w-1 · research · completed 1s"}}}
		shown := map[string]string{}
		for i := range typ.NumField() {
			field := typ.Field(i)
			if field.Name == "Kind" {
				continue // the pattern kind, written as the pattern's key
			}
			var p Pattern
			set(reflect.ValueOf(&p).Elem().Field(i))
			s := p.String()
			Expect(s).To(HavePrefix("entry "), "%s is not shown", field.Name)
			key, _, _ := strings.Cut(strings.TrimPrefix(s, "entry "), "=")
			Expect(shown).NotTo(HaveKey(key), "%s and %s show as one key", field.Name, shown[key])
			shown[key] = field.Name
			missed := 0
			for _, e := range []*trace.Entry{bare, full} {
				if why := p.Mismatches(empty, e); len(why) > 0 {
					Expect(p.Match(empty, e)).To(BeFalse(), "%s: Match and Mismatches disagree", field.Name)
					missed++
				}
			}
			Expect(missed).To(BeNumerically(">", 0), "%s is set, but it matches every entry", field.Name)
		}
	})

	It("the keys a pattern is shown with are the keys a scenario file writes it with", func() {
		var fileKeys []string
		for _, set := range FileKeys() {
			if set.Section == "pattern fields" {
				fileKeys = set.Keys
			}
		}
		Expect(fileKeys).NotTo(BeEmpty())
		typ := reflect.TypeFor[Pattern]()
		var keys []string
		for i := range typ.NumField() {
			if typ.Field(i).Name == "Kind" {
				continue
			}
			var p Pattern
			set(reflect.ValueOf(&p).Elem().Field(i))
			key, _, _ := strings.Cut(strings.TrimPrefix(p.String(), "entry "), "=")
			keys = append(keys, key)
		}
		Expect(keys).To(ConsistOf(fileKeys))
	})
})
