package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

// These tests record against OpenAI-compatible servers on loopback that
// write JSON the way servers outside this project do (pretty-printed,
// spaced, escaped, with null or empty content, no usage, tool-call ids of
// any shape, a rate limit first), then replay offline with the server
// stopped, and check that the replay's report is byte for byte the
// recording's.

// style is how a server writes its answers.
type style struct {
	pretty     bool               // pretty-printed response bodies
	spaced     bool               // spaced JSON inside content and tool-call arguments, keys reordered
	escaped    bool               // every "e" inside a JSON string of the body written as \u0065
	emptyText  bool               // content "" instead of null beside tool calls
	noUsage    bool               // no usage object
	ids        func(n int) string // tool-call ids
	rateLimits int                // the first n requests get a 429 with Retry-After: 3
	noIDs      bool               // tool calls without ids (the provider makes them)
	objectArgs bool               // tool-call arguments as a JSON object, not a string
	parts      bool               // the child's answer as content parts, split inside the document
}

// styledModel plays seed 02's coordinator and research child, like
// researchModel, in a given style. echo, when set, is put into the research
// call's arguments and the final answer's text (a model repeating its key).
type styledModel struct {
	st   style
	echo string

	mu      sync.Mutex
	calls   int
	models  []string
	auth    []string
	queries []string
	paths   []string
}

const (
	compactFindings = `{"summary":"Chlorophyll fades as days shorten.","findings":["Carotenoids show through.","Anthocyanins form from trapped sugars."]}`
	// spacedFindings is how Python and most servers write the same
	// document, keys in another order and a \u escape in the text.
	spacedFindings = `{"findings": ["Carotenoids show through.", "Anthocyanins form from trapped sugars."],  "summary": "Chlorophyll fades as days shorten \u2014 slowly."}`
)

func (m *styledModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req wireRequest
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, `{"error":{"message":"bad json","type":"invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	m.mu.Lock()
	m.calls++
	n := m.calls
	m.models = append(m.models, req.Model)
	m.auth = append(m.auth, r.Header.Get("Authorization"))
	m.queries = append(m.queries, r.URL.RawQuery)
	m.paths = append(m.paths, r.URL.Path)
	m.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if n <= m.st.rateLimits {
		w.Header().Set("Retry-After", "3")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = io.WriteString(w, `{"error":{"message":"Rate limit reached for requests","type":"requests","code":"rate_limit_exceeded"}}`)
		return
	}

	system := req.Messages[0].Content
	last := req.Messages[len(req.Messages)-1]
	if last.Role == "system" && len(req.Messages) > 1 { // the trailing status block
		last = req.Messages[len(req.Messages)-2]
	}
	id := "call_" + string(rune('a'+n))
	if m.st.ids != nil {
		id = m.st.ids(n)
	}
	var message map[string]any
	finish := "stop"
	switch {
	case strings.HasPrefix(system, "Research the question"):
		content := compactFindings
		if m.st.spaced {
			content = spacedFindings
		}
		message = map[string]any{"role": "assistant", "content": content}
		if m.st.parts {
			cut := len(content) / 2
			message["content"] = []any{map[string]any{"type": "text", "text": content[:cut]}, map[string]any{"type": "text", "text": content[cut:]}}
		}
	case last.Role == "user":
		args := fmt.Sprintf(`{"question":%q,"run_in_background":true}`, last.Content)
		if m.st.spaced {
			args = fmt.Sprintf(`{ "run_in_background": true, "question": %q }`, last.Content)
		}
		if m.echo != "" {
			args = strings.TrimSuffix(args, "}") + `, "note": "` + m.echo + `"}`
		}
		message = m.call(id, "research", args)
		finish = "tool_calls"
	case last.Role == "tool" && workRefID.MatchString(last.Content):
		ref := workRefID.FindStringSubmatch(last.Content)[1]
		args := `{"action":"result","id":"` + ref + `"}`
		if m.st.spaced {
			args = "{\n  \"id\": \"" + ref + "\",\n  \"action\": \"result\"\n}"
		}
		message = m.call(id, "work", args)
		finish = "tool_calls"
	default:
		message = map[string]any{"role": "assistant", "content": "Leaves turn as chlorophyll fades; carotenoids show and anthocyanins form." + m.echoed()}
	}
	doc := map[string]any{
		"id": "chatcmpl-" + fmt.Sprint(n), "object": "chat.completion", "created": 1767225600, "model": req.Model,
		"choices": []any{map[string]any{"index": 0, "message": message, "finish_reason": finish}},
	}
	if !m.st.noUsage {
		doc["usage"] = map[string]any{"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60}
	}
	var out []byte
	if m.st.pretty {
		out, _ = json.MarshalIndent(doc, "", "    ")
	} else {
		out, _ = json.Marshal(doc)
	}
	if m.st.escaped {
		out = escapeInStrings(out, 'e')
	}
	_, _ = w.Write(out)
}

func (m *styledModel) echoed() string {
	if m.echo == "" {
		return ""
	}
	return " (I was sent " + m.echo + ")"
}

func (m *styledModel) call(id, name, args string) map[string]any {
	content := any(nil)
	if m.st.emptyText {
		content = ""
	}
	fn := map[string]any{"name": name, "arguments": args}
	if m.st.objectArgs {
		fn["arguments"] = json.RawMessage(args)
	}
	tc := map[string]any{"id": id, "type": "function", "function": fn}
	if m.st.noIDs {
		delete(tc, "id")
	}
	return map[string]any{"role": "assistant", "content": content, "tool_calls": []any{tc}}
}

func (m *styledModel) seen() (calls int, models, auth, queries, paths []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls, append([]string(nil), m.models...), append([]string(nil), m.auth...), append([]string(nil), m.queries...), append([]string(nil), m.paths...)
}

// escapeInStrings writes every c inside a JSON string as a \u escape, as
// some servers escape everything outside ASCII letters.
func escapeInStrings(b []byte, c byte) []byte {
	var out bytes.Buffer
	in, esc := false, false
	for _, x := range b {
		switch {
		case in && esc:
			esc = false
		case in && x == '\\':
			esc = true
		case x == '"':
			in = !in
		case in && x == c:
			fmt.Fprintf(&out, `\u%04x`, c)
			continue
		}
		out.WriteByte(x)
	}
	return out.Bytes()
}

// skipClock lets the provider's waits (Retry-After, backoff) pass at once
// and remembers them; attempt timeouts never fire. No test waits on the
// wall clock.
type skipClock struct {
	clockwork.Clock
	mu    sync.Mutex
	waits []time.Duration
}

func (c *skipClock) NewTimer(d time.Duration) clockwork.Timer {
	c.mu.Lock()
	c.waits = append(c.waits, d)
	c.mu.Unlock()
	fc := clockwork.NewFakeClock()
	t := fc.NewTimer(d)
	fc.Advance(d)
	return t
}

func (c *skipClock) AfterFunc(d time.Duration, f func()) clockwork.Timer {
	return clockwork.NewFakeClock().AfterFunc(d, f)
}

func (c *skipClock) waited() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.waits...)
}

func useSkipClock(t *testing.T) *skipClock {
	c := &skipClock{Clock: clockwork.NewRealClock()}
	providerClock = c
	t.Cleanup(func() { providerClock = nil })
	return c
}

// reportOf cuts record's or replay's output before the line that says
// where the exchanges went (record's retry notices come after it).
func reportOf(out string) string {
	for _, mark := range []string{"\nrecorded ", "\nreplayed "} {
		if i := strings.Index(out, mark); i >= 0 {
			return out[:i+1]
		}
	}
	return out
}

// A recording against each server replays offline, with the server
// stopped, with a byte-identical report: transcript, expectations and
// summary.
func TestARecordingAgainstServersThatWriteJSONDifferentlyReplaysByteForByte(t *testing.T) {
	styles := map[string]style{
		"pretty-printed bodies":                             {pretty: true},
		"spaced JSON in content and in tool-call arguments": {spaced: true},
		"escapes in every string":                           {escaped: true, spaced: true},
		"empty content beside tool calls":                   {emptyText: true},
		"no usage":                                          {noUsage: true},
		"tool-call ids without call_":                       {ids: func(n int) string { return fmt.Sprintf("toolu_%02d", n) }},
		"tool-call ids that are bare numbers":               {ids: func(n int) string { return fmt.Sprint(n) }},
		"a tool-call id that is one common letter":          {ids: func(n int) string { return string(rune('a' + n - 1)) }},
		"a 429 with Retry-After, then success":              {rateLimits: 1},
		"tool calls without ids":                            {noIDs: true},
		"arguments as a JSON object, pretty-printed":        {objectArgs: true, spaced: true, pretty: true},
		"the child's answer as content parts":               {parts: true, spaced: true, escaped: true},
		"everything at once":                                {pretty: true, spaced: true, escaped: true, emptyText: true, noUsage: true, rateLimits: 2, ids: func(n int) string { return fmt.Sprintf("fc-%d", 100-n) }},
	}
	for name, st := range styles {
		t.Run(name, func(t *testing.T) {
			clock := useSkipClock(t)
			model := &styledModel{st: st}
			srv := httptest.NewServer(model)
			path := filepath.Join(t.TempDir(), "leaves.cassette")
			code, recorded := runCLI(t, "record", "--base-url", srv.URL+"/v1", "--model", "gpt-4o-mini", "--no-api-key",
				"--virtual-latency", "2s", "research-coordinator", "-o", path)
			srv.Close()
			if code != 0 {
				t.Fatalf("record exited %d:\n%s", code, recorded)
			}
			if st.rateLimits > 0 {
				want := make([]time.Duration, st.rateLimits)
				for i := range want {
					want[i] = 3 * time.Second
				}
				if got := clock.waited(); fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("the provider waited %v, want the server's Retry-After %v", got, want)
				}
			}
			code, replayed := runCLI(t, "replay", path)
			if code != 0 {
				t.Fatalf("replay exited %d:\n%s", code, replayed)
			}
			if !strings.HasSuffix(replayed, "replayed 4 exchanges from "+path+" with no divergence\n") {
				t.Errorf("replay did not report a clean replay:\n%s", replayed)
			}
			if reportOf(replayed) != reportOf(recorded) {
				t.Errorf("the replay's report differs from the recording's:\n--- recorded\n%s\n--- replayed\n%s", recorded, replayed)
			}
			// The transcript renders JSON compactly; the cassette keeps the
			// child's exact output as the server wrote it, and the replay
			// hands back those bytes (the next request, which carries them
			// in the work result, matched).
			exact := compactFindings
			if st.spaced {
				exact = spacedFindings
			}
			raw, _ := os.ReadFile(path)
			quoted, _ := json.Marshal(exact)
			if !bytes.Contains(raw, []byte(`"output":`+string(quoted))) {
				t.Errorf("the cassette does not keep the child's exact output %s:\n%s", exact, raw)
			}
		})
	}
}

// Editing the child's answer in a cassette recorded against a server that
// spaces its JSON gives the divergence at the one field it changed.
func TestAnEditedCassetteGivesThePreciseDivergence(t *testing.T) {
	srv := httptest.NewServer(&styledModel{st: style{spaced: true, pretty: true}})
	dir := t.TempDir()
	path := filepath.Join(dir, "leaves.cassette")
	if code, out := runCLI(t, "record", "--base-url", srv.URL+"/v1", "--model", "m", "--no-api-key", "--virtual-latency", "2s", "research-coordinator", "-o", path); code != 0 {
		t.Fatalf("record exited %d:\n%s", code, out)
	}
	srv.Close()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	edited := bytes.Replace(raw, []byte("Anthocyanins form from trapped sugars."), []byte("Anthocyanins form from sunlight."), 1)
	if bytes.Equal(edited, raw) {
		t.Fatal("the finding to edit is not in the cassette")
	}
	editedPath := filepath.Join(dir, "edited.cassette")
	if err := os.WriteFile(editedPath, edited, 0o644); err != nil {
		t.Fatal(err)
	}
	line := 0
	for i, l := range strings.Split(string(edited), "\n") {
		if strings.Contains(l, `"kind":"request"`) && strings.Contains(l, `"agent":"research-coordinator"`) && strings.Contains(l, `"step":3`) {
			line = i + 1
		}
	}
	code, out := runCLI(t, "replay", editedPath)
	if code != 1 {
		t.Fatalf("replaying an edited cassette exited %d, want 1:\n%s", code, out)
	}
	want := fmt.Sprintf("%s:%d: replay mismatch: research-coordinator run 1 step 3 differs from the cassette at messages[4].content (as JSON, at findings[1])\n", editedPath, line)
	if !strings.Contains(out, want) {
		t.Errorf("the divergence report lacks %q:\n%s", want, out)
	}
	for _, side := range []string{"  cassette: " + strings.Replace(spacedFindings, "sunlight.", "trapped sugars.", 1), "  run:      " + strings.Replace(spacedFindings, "trapped sugars.", "sunlight.", 1)} {
		if !strings.Contains(out, side) {
			t.Errorf("the divergence report lacks the side %q:\n%s", side, out)
		}
	}
}

// --model and --base-url decide the wire; the scenario's run.model is only
// a default; the cassette's header and request lines say what was sent.
func TestRecordModelFlagDecidesTheWireAndTheCassette(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flags []string
		want  string
	}{
		{"--model given", []string{"--model", "llama3.1"}, "llama3.1"},
		{"--model omitted", nil, "gpt-4o-mini"}, // research-coordinator's run.model
	} {
		t.Run(tc.name, func(t *testing.T) {
			model := &styledModel{}
			srv := httptest.NewServer(model)
			defer srv.Close()
			path := filepath.Join(t.TempDir(), "x.cassette")
			args := append([]string{"record", "--base-url", srv.URL + "/v1", "--no-api-key", "--virtual-latency", "2s"}, tc.flags...)
			code, out := runCLI(t, append(args, "research-coordinator", "-o", path)...)
			if code != 0 {
				t.Fatalf("record exited %d:\n%s", code, out)
			}
			_, models, _, _, paths := model.seen()
			for i, m := range models {
				if m != tc.want {
					t.Errorf("request %d sent model %q, want %q", i+1, m, tc.want)
				}
				if paths[i] != "/v1/chat/completions" {
					t.Errorf("request %d went to %q", i+1, paths[i])
				}
			}
			raw, _ := os.ReadFile(path)
			models = regexp.MustCompile(`"model":"([^"]*)"`).FindAllString(string(raw), -1)
			if len(models) < 3 { // the header and each run's first request
				t.Fatalf("the cassette names the model %d times:\n%s", len(models), raw)
			}
			for _, m := range models {
				if m != `"model":"`+tc.want+`"` {
					t.Errorf("the cassette says %s, but %q was sent", m, tc.want)
				}
			}
		})
	}
}

// recordFails records against a server (or a closed port) that fails and
// returns the exit code and output.
func recordFails(t *testing.T, base string, extra ...string) (int, string, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "x.cassette")
	args := append([]string{"record", "--base-url", base, "--model", "gpt-4o-mini", "--virtual-latency", "2s"}, extra...)
	code, out := runCLI(t, append(args, "research-coordinator", "-o", path)...)
	return code, out, path
}

func assertNoFile(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("a failed recording left %s (stat: %v)", path, err)
	}
	leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".*"))
	if len(leftovers) > 0 {
		t.Errorf("a failed recording left temporary files: %v", leftovers)
	}
}

// An unset key variable is bad usage before any request is sent.
func TestRecordRefusesAnUnsetKeyVariableBeforeAnyRequest(t *testing.T) {
	model := &styledModel{}
	srv := httptest.NewServer(model)
	defer srv.Close()
	t.Setenv("CRUX_UNSET_KEY", "")
	code, out, path := recordFails(t, srv.URL+"/v1", "--api-key-env", "CRUX_UNSET_KEY")
	if code != 2 {
		t.Fatalf("record exited %d, want 2:\n%s", code, out)
	}
	want := "crux-sim: the API key variable CRUX_UNSET_KEY is unset or empty: export it, name another with --api-key-env, or pass --no-api-key for an endpoint that needs no key\n"
	if out != want {
		t.Errorf("record said %q, want %q", out, want)
	}
	if calls, _, _, _, _ := model.seen(); calls != 0 {
		t.Errorf("the server received %d requests before the error", calls)
	}
	assertNoFile(t, path)

	// --no-api-key says the endpoint needs none: no Authorization header.
	code, out, _ = recordFails(t, srv.URL+"/v1", "--no-api-key")
	if code != 0 {
		t.Fatalf("record --no-api-key exited %d:\n%s", code, out)
	}
	_, _, auth, _, _ := model.seen()
	for _, a := range auth {
		if a != "" {
			t.Errorf("record --no-api-key sent Authorization %q", a)
		}
	}
}

// A provider that fails ends the recording with exit 2 and the provider's
// own message, and leaves no cassette (nor any temporary file); an earlier
// cassette at the same path is left as it was.
func TestAFailedRecordingIsBadInputAndLeavesNoCassette(t *testing.T) {
	useSkipClock(t)
	failing := func(status int, body string) *httptest.Server {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_, _ = io.WriteString(w, body)
		}))
		t.Cleanup(srv.Close)
		return srv
	}
	refused := httptest.NewServer(http.NotFoundHandler())
	refusedURL := refused.URL
	refused.Close()
	for _, tc := range []struct {
		name string
		base string
		want []string
	}{
		{"a refused connection", refusedURL + "/v1", []string{"connection failed", "connection refused"}},
		{"a 401", failing(401, `{"error":{"message":"Incorrect API key provided: sk-wr***ng.","type":"invalid_request_error","code":"invalid_api_key"}}`).URL + "/v1",
			[]string{"HTTP 401 Unauthorized: not authorized", "Incorrect API key provided: sk-wr***ng."}},
		{"a 403", failing(403, `{"error":{"message":"Project does not have access to model gpt-4o-mini","type":"invalid_request_error","code":"model_not_found"}}`).URL + "/v1",
			[]string{"HTTP 403 Forbidden", "Project does not have access to model gpt-4o-mini"}},
		{"an unknown model", failing(404, `{"error":{"message":"The model 'gpt-4o-mini' does not exist","type":"invalid_request_error","code":"model_not_found"}}`).URL + "/v1",
			[]string{"HTTP 404 Not Found: request refused", "The model 'gpt-4o-mini' does not exist"}},
		{"a server that keeps failing", failing(503, `{"error":{"message":"The server is overloaded","type":"server_error"}}`).URL + "/v1",
			[]string{"HTTP 503 Service Unavailable: server error", "The server is overloaded", "gave up after 4 attempts"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, path := recordFails(t, tc.base, "--no-api-key")
			if code != 2 {
				t.Fatalf("record exited %d, want 2:\n%s", code, out)
			}
			for _, w := range append(tc.want, "the recording was stopped", path+" was not written") {
				if !strings.Contains(out, w) {
					t.Errorf("the message lacks %q:\n%s", w, out)
				}
			}
			if strings.Contains(out, "-- expectations --") {
				t.Errorf("a failed recording printed a transcript as if it had run:\n%s", out)
			}
			assertNoFile(t, path)
		})
	}

	t.Run("an earlier cassette is left as it was", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "keep.cassette")
		if err := os.WriteFile(path, []byte("the earlier, good cassette\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		code, out := runCLI(t, "record", "--base-url", refusedURL+"/v1", "--model", "m", "--no-api-key", "research-coordinator", "-o", path)
		if code != 2 {
			t.Fatalf("record exited %d, want 2:\n%s", code, out)
		}
		if b, _ := os.ReadFile(path); string(b) != "the earlier, good cassette\n" {
			t.Errorf("the failed recording changed the earlier cassette to %q", b)
		}
	})

	t.Run("--keep-partial keeps the failed attempt, marked incomplete, and replay refuses it", func(t *testing.T) {
		dir := t.TempDir()
		path, partial := filepath.Join(dir, "x.cassette"), filepath.Join(dir, "x.partial")
		code, out := runCLI(t, "record", "--base-url", refusedURL+"/v1", "--model", "m", "--no-api-key", "--retries", "0",
			"--keep-partial", partial, "research-coordinator", "-o", path)
		if code != 2 {
			t.Fatalf("record exited %d, want 2:\n%s", code, out)
		}
		if !strings.Contains(out, "the 1 exchange(s) recorded are kept in "+partial+", marked incomplete") {
			t.Errorf("record does not say where the attempt is kept:\n%s", out)
		}
		raw, err := os.ReadFile(partial)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(strings.SplitN(string(raw), "\n", 2)[0], `"incomplete":"openai: chat completion at `+refusedURL+`/v1/chat/completions: connection failed`) {
			t.Errorf("the partial file's header does not say it is incomplete:\n%s", raw)
		}
		if strings.Contains(string(raw), `"kind":"end"`) {
			t.Errorf("the partial file has an end line:\n%s", raw)
		}
		code, out = runCLI(t, "replay", partial)
		if code != 2 || !strings.Contains(out, "cassette is an incomplete recording: the recording failed (openai: chat completion at") {
			t.Errorf("replaying the partial file exited %d:\n%s", code, out)
		}
	})
}

// --retries 0 means one attempt and no retry; --retries N means N retries.
func TestRecordRetriesMeansRetries(t *testing.T) {
	clock := useSkipClock(t)
	for _, tc := range []struct {
		retries  string
		attempts int
	}{{"0", 1}, {"1", 2}, {"3", 4}} {
		t.Run("--retries "+tc.retries, func(t *testing.T) {
			var mu sync.Mutex
			n := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				mu.Lock()
				n++
				mu.Unlock()
				w.WriteHeader(http.StatusInternalServerError)
				_, _ = io.WriteString(w, `{"error":{"message":"boom","type":"server_error"}}`)
			}))
			defer srv.Close()
			before := len(clock.waited())
			code, out, _ := recordFails(t, srv.URL+"/v1", "--no-api-key", "--retries", tc.retries)
			if code != 2 {
				t.Fatalf("record exited %d, want 2:\n%s", code, out)
			}
			mu.Lock()
			defer mu.Unlock()
			if n != tc.attempts {
				t.Errorf("the server saw %d attempts, want %d", n, tc.attempts)
			}
			if waits := len(clock.waited()) - before; waits != tc.attempts-1 {
				t.Errorf("the provider waited %d times between attempts, want %d", waits, tc.attempts-1)
			}
		})
	}
	code, out, _ := recordFails(t, "http://127.0.0.1:9/v1", "--no-api-key", "--retries", "-1")
	if code != 2 || !strings.Contains(out, "--retries must be 0 (no retry) or more, not -1") {
		t.Errorf("record --retries -1 exited %d:\n%s", code, out)
	}
	code, out, _ = recordFails(t, "http://127.0.0.1:9/v1", "--no-api-key", "--timeout", "-1s")
	if code != 2 || !strings.Contains(out, "--timeout must be 0 (none) or more, not -1s") {
		t.Errorf("record --timeout -1s exited %d:\n%s", code, out)
	}
}

// No secret reaches any output: the cassette, the transcript record
// prints, its notices and errors, the replay, the HTML report. The server
// echoes the key (and the key without its sk- prefix) in its answers and
// receives credential query parameters, which stay a query.
func TestNoSecretReachesAnyOutput(t *testing.T) {
	useSkipClock(t)
	const key = "sk-proj-Q2x9WvT4mZ7yK1nB8cR3"
	model := &styledModel{st: style{rateLimits: 1}, echo: key + " and Q2x9WvT4mZ7yK1nB8cR3"}
	srv := httptest.NewServer(model)
	t.Setenv("CRUX_SECRET_KEY", key)
	query := "api-key=AzK3yV4lu3x&sig=S1gn4tur3V4lu3&token=T0k3nV4lu3x&key=K3yV4lu3xyz&x-tenant-pass=Cust0mS3cr3t&region=eu"
	secrets := []string{key, "Q2x9WvT4mZ7yK1nB8cR3", "AzK3yV4lu3x", "S1gn4tur3V4lu3", "T0k3nV4lu3x", "K3yV4lu3xyz", "Cust0mS3cr3t"}
	dir := t.TempDir()
	path := filepath.Join(dir, "leaves.cassette")

	var outputs []string
	code, recorded := runCLI(t, "record", "--base-url", srv.URL+"/v1?"+query, "--secret-param", "^x-tenant-pass$", "--model", "m",
		"--api-key-env", "CRUX_SECRET_KEY", "--virtual-latency", "2s", "research-coordinator", "-o", path)
	if code != 0 {
		t.Fatalf("record exited %d:\n%s", code, recorded)
	}
	outputs = append(outputs, recorded)
	if !strings.Contains(recorded, "retrying in 3s") {
		t.Errorf("record printed no notice of the retry, which the check below needs:\n%s", recorded)
	}
	_, _, auth, queries, paths := model.seen()
	for i := range queries {
		if paths[i] != "/v1/chat/completions" || queries[i] != query || auth[i] != "Bearer "+key {
			t.Errorf("request %d went to %s?%s with %q", i+1, paths[i], queries[i], auth[i])
		}
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	outputs = append(outputs, string(raw))
	srv.Close()

	code, replayed := runCLI(t, "replay", path)
	if code != 0 {
		t.Fatalf("replay exited %d:\n%s", code, replayed)
	}
	outputs = append(outputs, replayed)
	html := filepath.Join(dir, "leaves.html")
	if code, out := runCLI(t, "report", path, "-o", html); code != 0 {
		t.Fatalf("report exited %d:\n%s", code, out)
	}
	page, _ := os.ReadFile(html)
	outputs = append(outputs, string(page))

	// The same secrets in the error of a failed recording.
	code, failed := runCLI(t, "record", "--base-url", srv.URL+"/v1?"+query, "--secret-param", "^x-tenant-pass$", "--model", "m",
		"--api-key-env", "CRUX_SECRET_KEY", "--retries", "0", "--keep-partial", filepath.Join(dir, "x.partial"), "research-coordinator", "-o", filepath.Join(dir, "x.cassette"))
	if code != 2 {
		t.Fatalf("record against the stopped server exited %d:\n%s", code, failed)
	}
	partial, _ := os.ReadFile(filepath.Join(dir, "x.partial"))
	outputs = append(outputs, failed, string(partial))

	for i, out := range outputs {
		for _, s := range secrets {
			if strings.Contains(out, s) {
				t.Errorf("output %d holds the secret %q:\n%s", i, s, out)
			}
		}
		if strings.Contains(out, "Bearer") || strings.Contains(out, "Authorization") {
			t.Errorf("output %d shows an Authorization header:\n%s", i, out)
		}
	}
	if !strings.Contains(replayed, "(I was sent [REDACTED] and [REDACTED])") {
		t.Errorf("the echoed key is not shown redacted in the replay:\n%s", replayed)
	}
}

// An interrupt (Ctrl-C) while a provider call is in flight ends the
// recording at once as a failed one: the call is cut short, the exit is 2
// and says why, and no cassette and no temporary file is left behind.
func TestAnInterruptedRecordingLeavesNoFile(t *testing.T) {
	useSkipClock(t)
	arrived, cut := make(chan struct{}), make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // so that the server sees the client hang up
		once.Do(func() { close(arrived) })
		<-r.Context().Done() // the model never answers; only the interrupt ends the call
		close(cut)
	}))
	defer srv.Close()
	go func() {
		<-arrived
		_ = syscall.Kill(os.Getpid(), syscall.SIGINT)
	}()
	code, out, path := recordFails(t, srv.URL+"/v1", "--no-api-key", "--retries", "0", "--timeout", "0")
	if code != 2 {
		t.Fatalf("record exited %d, want 2:\n%s", code, out)
	}
	for _, w := range []string{"the recording was interrupted", path + " was not written"} {
		if !strings.Contains(out, w) {
			t.Errorf("the message lacks %q:\n%s", w, out)
		}
	}
	assertNoFile(t, path)
	// The model never answers and nothing times out, so record came back
	// only because the interrupt cut the call; the server saw it hang up.
	<-cut
}

// No secret reaches any output, and a key too short to be one (a local
// server's placeholder, such as "ollama") is not redacted: record says so
// before any request, rather than let the user believe it was.
func TestRecordSaysAKeyTooShortToRedactIsNotRedacted(t *testing.T) {
	srv := httptest.NewServer(&styledModel{})
	defer srv.Close()
	t.Setenv("CRUX_SHORT_KEY", "ollama")
	code, out, _ := recordFails(t, srv.URL+"/v1", "--api-key-env", "CRUX_SHORT_KEY")
	if code != 0 {
		t.Fatalf("record exited %d:\n%s", code, out)
	}
	want := "crux-sim: the key in CRUX_SHORT_KEY is shorter than 8 characters, so it is taken for a local server's placeholder: it is sent, but not redacted from the cassette or any output\n"
	if !strings.HasPrefix(out, want) && !strings.Contains(out, "\n"+want) {
		t.Errorf("record did not say the key is not redacted; want %q in:\n%s", want, out)
	}
}
