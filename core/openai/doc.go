// Package openai is a core.Provider for the Chat Completions API of any
// OpenAI-compatible endpoint: OpenAI itself, Azure OpenAI, vLLM, Ollama,
// llama.cpp's server, LM Studio, TGI, and gateways such as LiteLLM. It is
// the only package of crux-sim that talks to a real model, and the only one
// that imports go-openai.
//
//	p := openai.New(openai.Options{
//		BaseURL: "http://localhost:11434/v1", // Ollama; omit for OpenAI
//		APIKey:  os.Getenv("OPENAI_API_KEY"),
//		Model:   "qwen2.5:7b",
//	})
//	defer p.Close() // releases its connections
//	rt := core.New(core.Options{Provider: p})
//
// A query string in BaseURL (an api-version, a gateway's key parameter) is
// sent as the query of every request. No error the provider returns holds
// a credential it was given, even when an endpoint echoes it back: not the
// API key (nor the key without its vendor prefix, sk-proj-…), not the base
// URL's user info, query or credential query values (api-key, key, token,
// sig, …), not the value of a credential header in Options.Headers
// (Authorization, X-Api-Key, …). Each is replaced by [REDACTED], by the
// same rule the cassette redactor follows.
//
// # How a semantic request is sent
//
// One core.Request becomes one chat completion request:
//
//   - the agent's system text as the first message (role system);
//   - the history in order: user messages (supervisor guidance delivered by
//     send is a user message too), assistant messages with their
//     tool_calls, and tool messages carrying tool_call_id; a message
//     whose content is empty (an empty tool result, an empty user turn)
//     is sent with "content": "", since OpenAI refuses one without it;
//   - the request's "Background work:" status block, when there is one, as
//     a trailing system message (see [StatusRole]). It is regenerated for
//     every request and never stored, and putting it last keeps everything
//     before it a stable, cacheable prefix;
//   - the offered tools as function tools whose parameters are the
//     ToolSpec's JSON Schema, verbatim and non-strict;
//   - an output schema as response_format json_schema, strict when the
//     schema fits OpenAI's strict subset ([StrictCompatible]) and
//     non-strict otherwise; see [OutputMode] for endpoints that need
//     json_object or nothing.
//
// # How the answer comes back
//
// The first choice becomes a core.Response: its text; its tool calls with
// their ids and their argument strings kept verbatim, even when they are not
// valid JSON (the runtime turns malformed arguments into a model-facing tool
// error, so the model can correct itself and the run goes on); a JSON answer
// to an output schema as Response.Output, byte for byte as the endpoint
// wrote it; and the usage. The finish reason, kept as the server wrote it
// (some send stop with tool calls, or eos_token), which core.Response has
// no field for, is returned by [Provider.StepWithFinishReason].
//
// A tool call that comes without an id (or with "") gets call_<step>_<n>,
// n its place in the response, with a _<k> suffix if the response or the
// conversation already holds that id: unique, so every tool result
// answers its call, and the same for the same request and response, so a
// recording replays. Ids the server gave are kept as given, repeats
// included: the runtime's occurrence identity decides what a repeated call
// means.
//
// Servers written elsewhere do not all type every field as OpenAI does. A
// field the runtime never reads (created, the completion's id, logprobs,
// system_fingerprint, timings, stats, reasoning_content, choices after the
// first, ...) may hold any JSON or be missing; content may be an array of
// parts, whose text parts are joined; a tool-call id may be a number (its
// text is the id); arguments sent as a JSON object (or any value but a
// string) are kept as the text the server wrote (a byte in it that is not
// UTF-8 reads as U+FFFD, as in a JSON string); usage counts may be
// floats. A body is read whatever its Content-Type, after a UTF-8 byte
// order mark, and decompressed when it is still gzip-encoded. A body that
// is not a chat completion is ErrBadResponse, and the error names the field
// and what a chat completion holds there (choices[0].message.content is a
// number, want a string, an array of content parts or null).
//
// # Failures
//
// Every failure is an [*Error] whose Kind is a sentinel to branch on with
// errors.Is: [ErrRateLimited], [ErrQuotaExceeded], [ErrServer], [ErrAuth],
// [ErrBadRequest], [ErrTimeout], [ErrConnection], [ErrBadResponse],
// [ErrContentFiltered], [ErrLength]. Rate limits (429), 408, 409, 5xx,
// attempt timeouts and broken connections are retried up to
// Options.MaxRetries times (two by default), waiting what the server asked
// for in retry-after-ms or Retry-After (up to Options.MaxRetryAfter) or
// else an exponential backoff; an HTTP-date Retry-After is read against
// Options.Clock. A success body that is not a chat completion (garbage,
// HTML from a proxy, truncated JSON, no choices) is ErrBadResponse and
// shows the start of the body; so is a success whose body is over 32 MiB
// (or expands past it), which is not read past that bound, and the error
// says so; and so is an error object sent with a success status, whose
// message the error carries. An error body is read in the shapes servers
// write it, OpenAI's {"error":{...}} and others (vLLM's
// {"object":"error","message":...}, {"error":"text"}, {"detail":"text"},
// a gateway's {"message":"text"}), for Error's Message, Type and Code.
// What an error repeats of a server's words is bounded (512 bytes of
// message, 120 of body), one line, and scrubbed of credentials before it
// is cut. A cancelled context aborts the call at once, and the error
// satisfies errors.Is(err, context.Canceled).
//
// All waiting (attempt timeouts and backoff) runs on Options.Clock, a
// clockwork.Clock, so tests advance a fake clock instead of sleeping.
//
// Streaming is not implemented: the runtime consumes whole responses, and
// a cassette records whole exchanges.
package openai
