package openai_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"reflect"
	"testing"
	"unicode/utf8"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/core/openai"
	"github.com/crux-sim/crux-sim/internal/fixture/thirdparty"
)

// FuzzResponseDecoding is the rule for any success body at all: the step
// never panics, and either answers with a core.Response whose tool calls
// all have ids, or fails with an *Error of kind ErrBadResponse (or, for a
// body that says so in its finish_reason, ErrLength or
// ErrContentFiltered) whose text is bounded, valid UTF-8 and free of the
// API key; and the same body to the same request gives the same outcome
// every time, as a replay needs, and the same gzip-encoded. The seeds are the third-party table's
// bodies. Run it past the suite with
// go test -run '^$' -fuzz FuzzResponseDecoding -parallel 1 ./core/openai.
func FuzzResponseDecoding(f *testing.F) {
	for _, c := range append(append([]wireCase(nil), answers...), failures...) {
		f.Add([]byte(c.rep.Body), c.req != nil && c.req.Output != nil)
	}
	history := []core.Message{
		{Role: core.RoleUser, Content: "hi"},
		{Role: core.RoleAssistant, ToolCalls: []core.ToolCall{{ID: "call_3_1", Name: "work", Arguments: `{"action":"list"}`}}},
		{Role: core.RoleTool, ToolCallID: "call_3_1", ToolName: "work", Content: "[]"},
	}
	f.Fuzz(func(t *testing.T, body []byte, output bool) {
		req := &core.Request{Agent: "a", Step: 3, Messages: history}
		if output {
			req.Output = core.MustSchema(`{"type":"object"}`)
		}
		step := func(gzip bool) (*core.Response, string, error) {
			p := openai.New(openai.Options{BaseURL: "http://model.invalid/v1", APIKey: theKey, Model: "m",
				HTTPClient: &http.Client{Transport: thirdparty.Transport{Body: body, Gzip: gzip}}, Timeout: openai.NoTimeout, MaxRetries: openai.NoRetries})
			return p.StepWithFinishReason(context.Background(), req)
		}
		resp, reason, err := step(false)
		if err != nil {
			var e *openai.Error
			if !errors.As(err, &e) {
				t.Fatalf("not an *Error: %T %v", err, err)
			}
			switch {
			case errors.Is(err, openai.ErrBadResponse):
			case errors.Is(err, openai.ErrLength) && reason == "length":
			case errors.Is(err, openai.ErrContentFiltered) && reason == "content_filter":
			default:
				t.Fatalf("a success body failed as %v (finish reason %q)", err, reason)
			}
			text := err.Error()
			if len(text) > 2048 || !utf8.ValidString(text) {
				t.Fatalf("an unbounded or invalid error text (%d bytes): %q", len(text), text)
			}
			if bytes.Contains([]byte(text), []byte(theKey[8:])) {
				t.Fatalf("the error shows the API key: %s", text)
			}
		} else {
			for _, c := range resp.ToolCalls {
				if c.ID == "" {
					t.Fatalf("a tool call without an id: %+v", resp.ToolCalls)
				}
			}
		}
		for _, gzip := range []bool{false, true} {
			again, reason2, err2 := step(gzip)
			if !reflect.DeepEqual(again, resp) || reason2 != reason || (err == nil) != (err2 == nil) || err != nil && err.Error() != err2.Error() {
				t.Fatalf("the same body read again (gzip %t) differs:\n%+v %q %v\n%+v %q %v", gzip, resp, reason, err, again, reason2, err2)
			}
		}
	})
}
