package platform_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/platform"
)

var _ = Describe("The event logs", func() {
	It("hold every event the observer saw, each on its own log, in order, however long a log grows", func() {
		e := newEnv()
		root := e.root("scout")
		e.runner(func(_ *core.Request, n int) *core.Response { return &core.Response{Text: fmt.Sprintf("run %d", n)} })
		e.send(root, "/loop 5m ping")
		e.runFor(24 * time.Hour) // 289 runs: hundreds of events on the root's log, a short log per run
		e.settle()

		Expect(e.seen).To(HaveLen(3+7*289), "the root's 2 and 2 a run, scheduler.leader, 5 a run on its own log")
		Expect(e.p.AllEvents()).To(Equal(e.seen))
		byLog := map[string][]platform.Event{}
		for _, ev := range e.seen {
			byLog[ev.Session] = append(byLog[ev.Session], ev)
		}
		Expect(byLog[root]).To(HaveLen(2 + 2*289))
		for id, want := range byLog {
			Expect(e.p.Events(id)).To(Equal(want), "the log of %q", id)
		}
	})

	It("reach an EventReader by address as the same events, in the same order, that an Observer is handed by value", func() {
		reader := &eventReader{}
		e := newEnv(func(o *platform.Options) { o.Observer = reader })
		root := e.root("scout")
		e.runner(func(_ *core.Request, n int) *core.Response { return &core.Response{Text: fmt.Sprintf("run %d", n)} })
		e.send(root, "/loop 5m ping")
		e.runFor(time.Hour)
		e.settle()

		Expect(reader.observed).To(BeEmpty(), "an EventReader is not handed copies through Observe")
		Expect(reader.read).To(HaveLen(3+7*13), "the root's 2 and 2 a run, scheduler.leader, 5 a run on its own log")
		Expect(e.p.AllEvents()).To(Equal(reader.read))
	})

	It("give back every field an event was emitted with, whichever of them are set, and a turn or attempt past 32 bits", func() {
		e := newEnv()
		root := e.root("scout")
		full := platform.Event{Type: platform.EventTaskCreated, Child: "c", Other: "o", Task: "t", Attempt: 3,
			Schedule: "sch", Item: "i", Agent: "a", Kind: platform.KindTask, Turn: 7, Goal: "g", Status: "s",
			Channel: "ch", Path: "p", Siblings: true, Text: "x", Error: "err",
			Metadata: json.RawMessage(`{"k":1}`), Parents: []string{"p1", "p2"}}
		// Every field alone, then all of them, then every other one, and
		// parents set but empty (not nil).
		var events []platform.Event
		v := reflect.ValueOf(full)
		for i := range v.NumField() {
			switch v.Type().Field(i).Name {
			case "Seq", "Time", "Session", "Type":
				continue
			}
			one := platform.Event{Type: platform.EventTaskCreated}
			reflect.ValueOf(&one).Elem().Field(i).Set(v.Field(i))
			events = append(events, one)
		}
		alternate := full
		alternate.Other, alternate.Schedule, alternate.Agent, alternate.Goal, alternate.Channel, alternate.Text = "", "", "", "", "", ""
		alternate.Turn, alternate.Metadata = 0, nil
		events = append(events, full, alternate, platform.Event{Type: platform.EventTaskCreated, Parents: []string{}})
		// A turn and an attempt past 32 bits, and one of them alone.
		wide := alternate
		wide.Turn, wide.Attempt = 1<<40+7, -(1 << 33)
		events = append(events, wide, platform.Event{Type: platform.EventTurnEnd, Turn: 1 << 31})

		for _, log := range []string{"", root, "not-live-here"} {
			for _, want := range events {
				want.Session = log
				e.p.Emit(want)
				got := e.seen[len(e.seen)-1]
				want.Seq, want.Time = got.Seq, got.Time
				Expect(got).To(Equal(want), "what the observer saw")
				evs := e.p.Events(log)
				Expect(evs[len(evs)-1]).To(Equal(want), "what the log of %q gives back", log)
			}
		}
	})
})

// eventReader keeps the events it is handed, by address (read) or by
// value (observed).
type eventReader struct{ read, observed []platform.Event }

func (r *eventReader) Observe(e platform.Event)    { r.observed = append(r.observed, e) }
func (r *eventReader) ReadEvent(e *platform.Event) { r.read = append(r.read, *e) }
