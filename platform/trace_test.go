package platform_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core/trace"
	"github.com/crux-sim/crux-sim/platform"
)

var _ = Describe("An event's one-line rendering", func() {
	every := platform.Event{Session: "session-1", Type: platform.EventWorkerComplete, Kind: platform.KindTask,
		Agent: "writer", Child: "session-2", Other: "session-3", Task: "task-1", Parents: []string{"task-0", "task-9"},
		Attempt: 2, Turn: 3, Schedule: "schedule-1", Item: "inbox-1", Status: "completed", Channel: "slack",
		Path: "notes/a.md", Siblings: true, Goal: `find "it"`, Text: "line one\nline two", Error: "boom\t!",
		Metadata: json.RawMessage(`{"tests_run":3}`)}

	It("is the log, the type, then every set field in a fixed order, quoting free text", func() {
		Expect(every.String()).To(Equal(`session-1 worker.complete kind=task agent=writer child=session-2 other=session-3` +
			` task=task-1 parents=task-0,task-9 attempt=2 turn=3 schedule=schedule-1 item=inbox-1 status=completed` +
			` channel=slack path=notes/a.md siblings=true goal="find \"it\"" text="line one\nline two" error="boom\t!"` +
			` metadata={"tests_run":3}`))
		Expect(platform.Event{Type: platform.EventSchedulerLeader, Parents: []string{""}}.String()).
			To(Equal("platform scheduler.leader"), "the platform log's name, and no field that is empty")
	})

	It("quotes free text as strconv.Quote does, whatever bytes it holds", func() {
		texts := []string{"", "the build is green", `say "hi"`, `a\b`, "naïve", "tab\there", "\xff\xfe", "日本"}
		for c := 0; c < 256; c++ {
			texts = append(texts, string([]byte{'a', byte(c), 'z'}))
		}
		for _, text := range texts {
			want := "platform loop.result"
			if text != "" {
				want += " text=" + strconv.Quote(text)
			}
			Expect(platform.Event{Type: platform.EventLoopResult, Text: text}.String()).To(Equal(want), "text %q", text)
		}
	})

	It("allocates only the line itself: a trace line per event costs one allocation", func() {
		Expect(testing.AllocsPerRun(100, func() { _ = every.String() })).To(Equal(1.0))
	})
})

var _ = Describe("The trace observer", func() {
	events := func(n int) []platform.Event {
		out := make([]platform.Event, n)
		for i := range out {
			// Lines of every length up to a few hundred bytes, some past a
			// chunk's end.
			out[i] = platform.Event{Session: "session-" + strconv.Itoa(i%7), Type: platform.EventLoopResult,
				Schedule: "schedule-" + strconv.Itoa(i), Text: strings.Repeat("q", i%400)}
		}
		out[0] = platform.Event{Session: "session-0", Type: platform.EventSessionCreated, Agent: "scout"}
		out[1] = platform.Event{Session: "session-1", Type: platform.EventSessionCreated, Agent: "writer"}
		return out
	}

	It("records each event's one-line rendering as its detail, unchanged by the events recorded after it", func() {
		rec := trace.NewRecorder(epoch)
		obs := platform.TraceObserver(rec)
		evs := events(2000)
		for _, e := range evs {
			obs.Observe(e)
		}
		entries := rec.Trace().Entries
		Expect(entries).To(HaveLen(len(evs)))
		for i, en := range entries {
			Expect(en.Detail).To(Equal(evs[i].String()), "entry %d", i)
			Expect(en.Run).To(Equal(evs[i].Session))
		}
		Expect(entries[7].Agent).To(Equal("scout"), "session-0's agent, from its session.created")
		Expect(entries[8].Agent).To(Equal("writer"))
		Expect(entries[9].Agent).To(BeEmpty(), "session-2 was never created here")
	})

	It("records each session's agent whatever its id, the one it was last created or restored with", func() {
		rec := trace.NewRecorder(epoch)
		obs := platform.TraceObserver(rec)
		ids := []string{"session-1", "session-01", "session-0", "session-4095", "session-4096", "session-99999",
			"session-", "session-x", "sess-1", "7f3a-uuid", "", "session-12", "session-+1", "session--1"}
		agents := map[string]string{}
		for i, id := range ids {
			agent := "agent-" + strconv.Itoa(i)
			obs.Observe(platform.Event{Session: id, Type: platform.EventSessionCreated, Agent: agent})
			agents[id] = agent
		}
		obs.Observe(platform.Event{Session: "session-12", Type: platform.EventSessionRestored, Agent: "again"})
		obs.Observe(platform.Event{Session: "7f3a-uuid", Type: platform.EventSessionRestored, Agent: "again too"})
		agents["session-12"], agents["7f3a-uuid"] = "again", "again too"
		// Each id's events between others', so that none is the one last
		// looked up.
		asked := append(append([]string{}, ids...), "session-2", "session-40000", "other")
		for _, id := range asked {
			obs.Observe(platform.Event{Session: "session-3", Type: platform.EventTurnStart})
			obs.Observe(platform.Event{Session: "session-5", Type: platform.EventTurnStart})
			obs.Observe(platform.Event{Session: id, Type: platform.EventTurnStart})
			entries := rec.Entries()
			Expect(entries[len(entries)-1].Agent).To(Equal(agents[id]), "session %q", id)
		}
	})

	It("allocates no line of its own: a thousand events cost a few chunks, not a thousand lines", func() {
		rec := trace.NewRecorder(epoch)
		rec.Grow(2000)
		obs := platform.TraceObserver(rec)
		evs := events(1000)
		for i := range evs {
			evs[i].Text = "the queue is quiet" // a typical line, some 80 bytes
		}
		allocs := testing.AllocsPerRun(1, func() {
			for _, e := range evs {
				obs.Observe(e)
			}
		})
		Expect(allocs).To(BeNumerically("<", 50), "allocations for 1,000 events")
	})
})
