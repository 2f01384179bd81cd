package cassette_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/harness/cassette"
)

// BenchmarkRecordReplay records and replays runs of 10, 100 and 1,000
// provider steps (the counter agent: one tool call a step, so the history
// grows by two messages a step) and reports the cassette's bytes and the
// time per step. Both must stay flat as the run grows: a cassette that
// repeated each run's history on every line grew with the square of the
// run, and so did reading and replaying it.
//
//	go test -run '^$' -bench RecordReplay -benchmem ./harness/cassette/
//
// record: the runtime runs the agent through a Recorder into memory.
// replay: the cassette is read and the runtime runs the agent through a
// Replayer. read and match isolate the cassette's own work: parsing the
// file, and matching the run's requests (captured once) against it.
func BenchmarkRecordReplay(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		agent, model := steps(n)
		run := func(p core.Provider) error {
			rt := core.New(core.Options{Provider: p, Clock: fixedClock(), IDs: &core.SequentialIDs{}, MaxSteps: n + 1})
			defer rt.Close()
			_, err := rt.Run(context.Background(), agent, "count")
			return err
		}
		record := func(p core.Provider) ([]byte, error) {
			var buf bytes.Buffer
			rec, err := cassette.NewRecorder(&buf, p, cassette.RecordOptions{Clock: fixedClock(), RealClock: fixedClock()})
			if err != nil {
				return nil, err
			}
			if err := run(rec); err != nil {
				return nil, err
			}
			err = rec.Close()
			return buf.Bytes(), err
		}
		sent := &requestsOf{inner: model}
		file, err := record(sent)
		if err != nil {
			b.Fatal(err)
		}
		perStep := func(b *testing.B) {
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/step")
			b.ReportMetric(float64(len(file))/float64(n), "B/step")
		}

		b.Run(fmt.Sprintf("steps=%d/record", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := record(model); err != nil {
					b.Fatal(err)
				}
			}
			perStep(b)
		})
		b.Run(fmt.Sprintf("steps=%d/replay", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c, err := cassette.Read(bytes.NewReader(file), "bench.cassette")
				if err != nil {
					b.Fatal(err)
				}
				rep := cassette.NewReplayer(c, cassette.ReplayOptions{})
				if err := run(rep); err != nil {
					b.Fatal(err)
				}
				if err := rep.Err(); err != nil {
					b.Fatal(err)
				}
			}
			perStep(b)
		})
		b.Run(fmt.Sprintf("steps=%d/read", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := cassette.Read(bytes.NewReader(file), "bench.cassette"); err != nil {
					b.Fatal(err)
				}
			}
			perStep(b)
		})
		b.Run(fmt.Sprintf("steps=%d/match", n), func(b *testing.B) {
			c, err := cassette.Read(bytes.NewReader(file), "bench.cassette")
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				rep := cassette.NewReplayer(c, cassette.ReplayOptions{})
				for _, req := range sent.reqs {
					if _, err := rep.Step(ctx, req); err != nil {
						b.Fatal(err)
					}
				}
			}
			perStep(b)
		})
	}
}
