package serve_test

import (
	"context"
	"net/http/httptest"
	"strconv"
	"testing"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/harness/serve"
	"github.com/crux-sim/crux-sim/scenarios"
	"github.com/crux-sim/crux-sim/scripted"
)

// BenchmarkServeRequest measures the server's per-request overhead on
// loopback: one go-openai chat completion of a coordinator-sized request
// (system text, the two tools, a short history), answered by a repeating
// scripted turn with no latency, through a real listener. It is the cost a
// client's test pays per model step, on top of its own runtime.
func BenchmarkServeRequest(b *testing.B) {
	for _, stream := range []bool{false, true} {
		name := "plain"
		if stream {
			name = "stream"
		}
		b.Run(name, func(b *testing.B) {
			a := &core.Agent{ID: "solo", Prompt: core.Prompt{System: coordinatorSystem}}
			sc := scenarios.New("bench").Agent("solo", a).
				Script("solo", scripted.Turn{Text: "Leaves change colour because chlorophyll breaks down.", Repeat: true})
			srv, err := serve.New(serve.Options{Scenario: sc})
			if err != nil {
				b.Fatal(err)
			}
			hs := httptest.NewServer(srv)
			defer hs.Close()
			defer srv.Finish("benchmark over")
			cfg := goopenai.DefaultConfig("")
			cfg.BaseURL = hs.URL + "/v1"
			client := goopenai.NewClientWithConfig(cfg)
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				// A new question each time: a new run, so the history the
				// server compares stays the same size.
				req := goopenai.ChatCompletionRequest{Model: "crux-sim/solo", Stream: stream, Messages: []goopenai.ChatCompletionMessage{
					{Role: "system", Content: coordinatorSystem},
					{Role: "user", Content: question + " #" + strconv.Itoa(i)}}}
				if stream {
					st, err := client.CreateChatCompletionStream(ctx, req)
					if err != nil {
						b.Fatal(err)
					}
					for {
						if _, err := st.Recv(); err != nil {
							break
						}
					}
					st.Close()
					continue
				}
				if _, err := client.CreateChatCompletion(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
