package platform

import (
	"math/rand/v2"
	"testing"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/platform/store"
)

// quickVariantLocked, the two variants last found compared first, gives
// what the quick map holds: random look-ups of keys that take turns,
// repeat, or were never made agree with the map at every step.
func TestQuickVariantIsWhatTheQuickMapHolds(t *testing.T) {
	tmpls := []*core.Agent{{ID: "a"}, {ID: "b"}}
	var keys []quickKey
	for _, tmpl := range tmpls {
		for _, kind := range []Kind{KindRoot, KindScheduled, KindWorker} {
			for _, sch := range []store.ScheduleKind{"", store.ScheduleCron, store.ScheduleDynamic} {
				for _, del := range []bool{false, true} {
					keys = append(keys, quickKey{tmpl: tmpl, kind: kind, schedule: sch, delegates: del})
				}
			}
		}
	}
	r := rand.New(rand.NewPCG(7, 8))
	for round := range 100 {
		p := &Platform{quick: map[quickKey]*core.Agent{}}
		for _, k := range keys {
			if r.IntN(3) > 0 {
				p.quick[k] = &core.Agent{ID: k.tmpl.ID}
			}
		}
		for step := range 500 {
			k := keys[r.IntN(len(keys))]
			if r.IntN(4) > 0 {
				k = keys[r.IntN(3)] // a few keys taking turns
			}
			if got, want := p.quickVariantLocked(k), p.quick[k]; got != want {
				t.Fatalf("round %d step %d: quickVariantLocked(%+v) = %p, the map holds %p", round, step, k, got, want)
			}
		}
	}
}
