package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// wireRequest is the part of an OpenAI Chat Completions request the fake
// model reads, decoded from the real wire format.
type wireRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role       string `json:"role"`
		Content    string `json:"content"`
		ToolCallID string `json:"tool_call_id"`
	} `json:"messages"`
	Tools []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

// researchModel is an OpenAI-compatible server on loopback that plays seed
// 02's coordinator and research child over the real wire format: tool
// calls, finish reasons, usage.
type researchModel struct {
	mu    sync.Mutex
	auth  []string
	calls int
}

var workRefID = regexp.MustCompile(`"kind":"work.ref","id":"([^"]+)"`)

func (m *researchModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/chat/completions" {
		http.Error(w, `{"error":{"message":"not found","type":"invalid_request_error"}}`, http.StatusNotFound)
		return
	}
	var req wireRequest
	body, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, `{"error":{"message":"bad json","type":"invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	m.mu.Lock()
	m.auth = append(m.auth, r.Header.Get("Authorization"))
	m.calls++
	n := m.calls
	m.mu.Unlock()

	system := req.Messages[0].Content
	last := req.Messages[len(req.Messages)-1]
	if last.Role == "system" && len(req.Messages) > 1 { // the trailing status block
		last = req.Messages[len(req.Messages)-2]
	}
	var message map[string]any
	finish := "stop"
	switch {
	case strings.HasPrefix(system, "Research the question"):
		message = map[string]any{"role": "assistant", "content": `{"summary":"Chlorophyll fades as days shorten.","findings":["Carotenoids show through.","Anthocyanins form from trapped sugars."]}`}
	case last.Role == "user":
		message = toolCall(n, "research", `{"question":"`+last.Content+`","run_in_background":true}`)
		finish = "tool_calls"
	case last.Role == "tool" && workRefID.MatchString(last.Content):
		id := workRefID.FindStringSubmatch(last.Content)[1]
		message = toolCall(n, "work", `{"action":"result","id":"`+id+`"}`)
		finish = "tool_calls"
	default:
		message = map[string]any{"role": "assistant", "content": "Leaves turn as chlorophyll fades; carotenoids show and anthocyanins form."}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-test", "object": "chat.completion", "created": 1767225600, "model": req.Model,
		"choices": []any{map[string]any{"index": 0, "message": message, "finish_reason": finish}},
		"usage":   map[string]any{"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60},
	})
}

func toolCall(n int, name, args string) map[string]any {
	return map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
		"id": "call_" + string(rune('a'+n)), "type": "function", "function": map[string]any{"name": name, "arguments": args}}}}
}

func runCLI(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Main(args, &out, &errOut)
	return code, out.String() + errOut.String()
}

// transcript cuts a report down to its transcript lines.
func transcript(report string) string {
	start := strings.Index(report, "== ")
	end := strings.Index(report, "-- expectations --")
	if start < 0 || end < 0 {
		return report
	}
	return report[start:end]
}

// Recording a scenario against a real (loopback) OpenAI-compatible server,
// then replaying the cassette offline, gives the same transcript; editing one
// recorded response makes the replay fail with a precise divergence; and no
// cassette holds the API key or an Authorization header.
func TestRecordThenReplayOfflineAndDivergeOnAnEditedResponse(t *testing.T) {
	model := &researchModel{}
	srv := httptest.NewServer(model)
	const key = "sk-test-4f9a2c1e7b8d6053aa11"
	t.Setenv("CRUX_TEST_KEY", key)
	path := filepath.Join(t.TempDir(), "research.cassette")

	code, recorded := runCLI(t, "record", "--base-url", srv.URL+"/v1", "--model", "gpt-4o-mini", "--api-key-env", "CRUX_TEST_KEY",
		"--virtual-latency", "2s", "research-coordinator", "-o", path)
	if code != 0 {
		t.Fatalf("record exited %d:\n%s", code, recorded)
	}
	if model.calls != 4 {
		t.Errorf("the model server answered %d requests, want 4 (three coordinator steps, one child step)", model.calls)
	}
	for _, a := range model.auth {
		if a != "Bearer "+key {
			t.Fatalf("the provider sent Authorization %q, want the key from the environment", a)
		}
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{key, "Bearer", "Authorization", "authorization"} {
		if bytes.Contains(raw, []byte(secret)) {
			t.Errorf("the cassette contains %q", secret)
		}
	}

	srv.Close() // replay must not need the network
	code, replayed := runCLI(t, "replay", path)
	if code != 0 {
		t.Fatalf("replay exited %d:\n%s", code, replayed)
	}
	if !strings.Contains(replayed, "with no divergence") {
		t.Errorf("replay did not report a clean replay:\n%s", replayed)
	}
	if transcript(replayed) != transcript(recorded) {
		t.Errorf("the replay's transcript differs from the recording's:\n--- recorded\n%s\n--- replayed\n%s", transcript(recorded), transcript(replayed))
	}

	edited := bytes.Replace(raw, []byte("Carotenoids show through."), []byte("Carotenoids show through, edited."), 1)
	if bytes.Equal(edited, raw) {
		t.Fatal("the research finding to edit is not in the cassette")
	}
	editedPath := filepath.Join(t.TempDir(), "edited.cassette")
	if err := os.WriteFile(editedPath, edited, 0o644); err != nil {
		t.Fatal(err)
	}
	code, diverged := runCLI(t, "replay", editedPath)
	if code != 1 {
		t.Fatalf("replaying an edited cassette exited %d, want 1:\n%s", code, diverged)
	}
	for _, want := range []string{"DIVERGED", "mismatch", "edited.cassette:", "Carotenoids show through, edited.", "Carotenoids show through."} {
		if !strings.Contains(diverged, want) {
			t.Errorf("the divergence report lacks %q:\n%s", want, diverged)
		}
	}
}

// A recorded cassette renders as an HTML report of its replay, and a
// cassette that diverges renders with the divergence as a failure.
func TestReportRendersACassetteReplay(t *testing.T) {
	srv := httptest.NewServer(&researchModel{})
	defer srv.Close()
	dir := t.TempDir()
	path := filepath.Join(dir, "leaves.cassette")
	if code, out := runCLI(t, "record", "--base-url", srv.URL+"/v1", "--model", "m", "--no-api-key", "--virtual-latency", "2s", "research-coordinator", "-o", path); code != 0 {
		t.Fatalf("record exited %d:\n%s", code, out)
	}
	html := filepath.Join(dir, "leaves.html")
	if code, out := runCLI(t, "report", path, "-o", html); code != 0 {
		t.Fatalf("report of a cassette exited %d:\n%s", code, out)
	}
	page, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(page, []byte("cassette replay of")) || !bytes.Contains(page, []byte("crux-sim replay")) {
		t.Error("the report does not say it shows a cassette replay")
	}
}
