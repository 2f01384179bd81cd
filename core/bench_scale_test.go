package core_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/crux-sim/crux-sim/core"
)

// workSizes are the numbers of Work items one owner holds in the scale
// benchmarks: a request's and an accept's cost must not grow with them.
var workSizes = []int{10, 1000, 100000}

// scaleFixture is a runtime whose owner "owner" can start any number of
// background "job" calls: a job whose input says hold runs until the
// runtime closes, any other finishes at once. One child runs at a time, so
// every job behind a holding one stays queued.
type scaleFixture struct {
	rt      *core.Runtime
	agent   *core.Agent
	turns   func(req *core.Request) *core.Response
	started chan struct{} // closed when the first holding job starts
}

func newScaleFixture(maxWork int) *scaleFixture {
	f := &scaleFixture{started: make(chan struct{})}
	var once sync.Once
	job := &core.Tool{
		Description: "a job",
		Input:       core.MustSchema(`{"type":"object","properties":{"hold":{"type":"boolean"}}}`),
		Run: func(ctx context.Context, _ core.ToolCall, input any) (any, error) {
			if hold, _ := input.(map[string]any)["hold"].(bool); !hold {
				return "done", nil
			}
			once.Do(func() { close(f.started) })
			<-ctx.Done()
			return nil, ctx.Err()
		},
	}
	f.agent = &core.Agent{ID: "owner-agent", Tools: core.Tools{"job": core.BackgroundTool("job", job)}}
	f.rt = core.New(core.Options{
		Provider:       core.ProviderFunc(func(_ context.Context, req *core.Request) (*core.Response, error) { return f.turns(req), nil }),
		MaxConcurrent:  1,
		MaxOutstanding: maxWork + 1,
	})
	return f
}

// jobCalls are n background job calls, holding or not.
func jobCalls(n int, hold bool, from int) []core.ToolCall {
	args := fmt.Sprintf(`{"hold":%t,"run_in_background":true}`, hold)
	calls := make([]core.ToolCall, n)
	for i := range calls {
		calls[i] = core.ToolCall{ID: "call-" + strconv.Itoa(from+i), Name: "job", Arguments: args}
	}
	return calls
}

// start runs one turn of the owner that makes the calls in one response.
func (f *scaleFixture) start(tb interface{ Fatal(...any) }, calls []core.ToolCall) {
	f.turns = func(req *core.Request) *core.Response {
		if req.Step == 1 {
			return &core.Response{ToolCalls: calls}
		}
		return &core.Response{Text: "started"}
	}
	if _, err := f.rt.RunWith(context.Background(), f.agent, nil, core.RunOptions{Owner: "owner"}); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkStatusRequest measures one provider request of an owner that
// holds N Work items, half of them finished and half unfinished (one
// running, the rest queued): one op is a turn of that owner whose only
// request carries the status block, which shows 12 rows whatever N is.
//
//	go test ./core -run '^$' -bench StatusRequest -benchmem
func BenchmarkStatusRequest(b *testing.B) {
	for _, n := range workSizes {
		b.Run("work="+strconv.Itoa(n), func(b *testing.B) {
			f := newScaleFixture(n)
			defer f.rt.Close()
			f.start(b, append(jobCalls(n/2, false, 0), jobCalls(n-n/2, true, n/2)...))
			<-f.started // every finishing job has finished
			want := min(n, core.MaxStatusRows)
			f.turns = func(req *core.Request) *core.Response {
				if req.Status == nil || len(req.Status.Rows) != want || req.Status.Omitted != n-want {
					b.Fatalf("the request's status block is %+v, want %d rows and %d omitted", req.Status, want, n-want)
				}
				return &core.Response{Text: "noted"}
			}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := f.rt.RunWith(ctx, f.agent, nil, core.RunOptions{Owner: "owner"}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAcceptWork measures admitting Work: one op is one response of
// an owner that makes N background calls, every one accepted (the first
// holds the only running slot, so the rest stay queued). ns/item is the
// cost of one accepted call, which must not grow with N.
//
//	go test ./core -run '^$' -bench AcceptWork -benchmem
func BenchmarkAcceptWork(b *testing.B) {
	for _, n := range workSizes {
		b.Run("work="+strconv.Itoa(n), func(b *testing.B) {
			calls := jobCalls(n, true, 0)
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				f := newScaleFixture(n)
				b.StartTimer()
				f.start(b, calls)
				b.StopTimer()
				if works := f.rt.Works(); len(works) != n {
					b.Fatalf("%d Work items, want %d", len(works), n)
				}
				_ = f.rt.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/item")
		})
	}
}
