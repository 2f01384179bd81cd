package openai

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/jonboulle/clockwork"
	goopenai "github.com/sashabaranov/go-openai"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/internal/secret"
)

// Defaults.
const (
	// DefaultBaseURL is OpenAI's API.
	DefaultBaseURL = "https://api.openai.com/v1"
	// DefaultTimeout bounds one HTTP attempt. Long, as in OpenAI's own
	// SDKs: a slow completion is not a failure.
	DefaultTimeout = 10 * time.Minute
	// DefaultMaxRetries is how many times a retryable failure is retried
	// (so at most three attempts), as in OpenAI's own SDKs.
	DefaultMaxRetries = 2
	// DefaultMaxRetryAfter is the longest Retry-After the provider waits
	// out by itself; longer asks are returned as errors at once, so a run
	// does not silently stall for minutes.
	DefaultMaxRetryAfter = time.Minute
	// NoTimeout, as Options.Timeout, lets an attempt run until the caller's
	// context ends.
	NoTimeout time.Duration = -1
	// NoRetries, as Options.MaxRetries, makes every failure final.
	NoRetries = -1
)

// maxBody bounds how much of a response body is read: far above any chat
// completion, low enough that a misbehaving endpoint cannot exhaust memory.
const maxBody = 32 << 20

// Options configure a Provider. The zero value of every field has a
// working default; only the model must be named here or by the runtime.
type Options struct {
	// BaseURL is the API root, ending in /v1 for most servers: OpenAI
	// (the default), http://localhost:11434/v1 (Ollama),
	// http://localhost:8000/v1 (vLLM), http://localhost:8080/v1
	// (llama.cpp server), http://localhost:1234/v1 (LM Studio), or an Azure
	// resource URL together with Azure.
	BaseURL string
	// APIKey is sent as a bearer token (as api-key for Azure). Empty sends
	// no Authorization header, as local servers expect.
	APIKey string
	// Model is used when the request names none (the runtime's
	// Options.Model and RunOptions.Model name one).
	Model string
	// Organization is sent as OpenAI-Organization when set.
	Organization string
	// Azure, when set, speaks Azure OpenAI: deployments in the path, an
	// api-version query and the api-key header.
	Azure *Azure
	// HTTPClient sends the requests. Default: a client on a transport of
	// the provider's own (a clone of http.DefaultTransport), without a
	// client-wide timeout (Timeout below applies per attempt); Close
	// releases its connections.
	HTTPClient *http.Client
	// Headers are added to every request, e.g. OpenRouter's HTTP-Referer.
	Headers http.Header
	// Timeout bounds each HTTP attempt; an attempt that runs over fails
	// with ErrTimeout and is retried. Default DefaultTimeout; NoTimeout
	// disables it. The caller's context bounds the whole call regardless.
	Timeout time.Duration
	// MaxRetries bounds the retries of retryable failures (429 except
	// insufficient_quota, 408, 409, 5xx, timeouts, broken connections).
	// Default DefaultMaxRetries; NoRetries disables retrying.
	MaxRetries int
	// Backoff is the wait before retry n (from 1) when the server gives no
	// Retry-After. Default: 500ms doubling per retry, at most 8s, without
	// jitter so that recorded sessions retry on the same schedule.
	Backoff func(retry int) time.Duration
	// MaxRetryAfter is the longest Retry-After waited out; a longer one is
	// returned at once as the error (with Error.RetryAfter set). Default
	// DefaultMaxRetryAfter.
	MaxRetryAfter time.Duration
	// Clock times attempts and waits between them. Default the real
	// clock; tests pass a fake one and never wait on the wall clock.
	Clock clockwork.Clock
	// OnRetry, when set, is told of every retry before its wait begins.
	OnRetry func(Retry)
	// Temperature, Seed and MaxTokens are sent when set. A zero
	// Temperature is sent as zero (see chatRequest).
	Temperature *float32
	Seed        *int
	MaxTokens   int
	// Output says how an output schema is sent; see OutputMode.
	Output OutputMode
	// StatusRole is the role of the status block; default StatusAsSystem.
	StatusRole StatusRole
}

// Azure configures Azure OpenAI.
type Azure struct {
	// APIVersion is the api-version query parameter; default 2024-10-21.
	APIVersion string
	// Deployment maps a model name to its deployment; default: the model
	// name is the deployment name.
	Deployment func(model string) string
}

// Retry describes one retry, for Options.OnRetry.
type Retry struct {
	// Attempt is the attempt that failed, from 1.
	Attempt int
	// Delay is the wait before the next attempt.
	Delay time.Duration
	// Err is why the attempt failed.
	Err *Error
}

// Provider is a core.Provider that speaks the Chat Completions API of any
// OpenAI-compatible endpoint. It is safe for concurrent use.
type Provider struct {
	opts     Options
	client   *goopenai.Client
	clock    clockwork.Clock
	endpoint string // for error messages: no user info, no query
	// secrets are the credentials the provider was given, as
	// internal/secret finds them, never to be repeated in an error.
	secrets []string
	// own is the transport New made when Options.HTTPClient was nil.
	own *http.Transport
}

var _ core.Provider = (*Provider)(nil)

// New makes a Provider.
func New(opts Options) *Provider {
	if opts.BaseURL == "" {
		opts.BaseURL = DefaultBaseURL
	}
	if opts.Timeout == 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.MaxRetries == 0 {
		opts.MaxRetries = DefaultMaxRetries
	}
	if opts.MaxRetryAfter == 0 {
		opts.MaxRetryAfter = DefaultMaxRetryAfter
	}
	if opts.Backoff == nil {
		opts.Backoff = DefaultBackoff
	}
	if opts.Clock == nil {
		opts.Clock = clockwork.NewRealClock()
	}
	var own *http.Transport
	if opts.HTTPClient == nil {
		own = http.DefaultTransport.(*http.Transport).Clone()
		opts.HTTPClient = &http.Client{Transport: own}
	}
	// A query string in the base URL (a gateway's api-version, a key
	// parameter) stays a query: go-openai appends the path to BaseURL as
	// text, which would put /chat/completions inside the query.
	base, query := splitQuery(opts.BaseURL)
	var cfg goopenai.ClientConfig
	if opts.Azure != nil {
		cfg = goopenai.DefaultAzureConfig(opts.APIKey, base)
		if opts.Azure.APIVersion != "" {
			cfg.APIVersion = opts.Azure.APIVersion
		} else {
			cfg.APIVersion = "2024-10-21"
		}
		if d := opts.Azure.Deployment; d != nil {
			cfg.AzureModelMapperFunc = d
		} else {
			cfg.AzureModelMapperFunc = func(model string) string { return model }
		}
	} else {
		cfg = goopenai.DefaultConfig(opts.APIKey)
		cfg.BaseURL = base
	}
	cfg.OrgID = opts.Organization
	cfg.HTTPClient = &capturingDoer{client: opts.HTTPClient, headers: opts.Headers, query: query}
	return &Provider{
		opts:     opts,
		client:   goopenai.NewClientWithConfig(cfg),
		clock:    opts.Clock,
		endpoint: endpointForErrors(opts.BaseURL),
		secrets:  credentials(opts),
		own:      own,
	}
}

// credentials lists what the options hold that an error must never repeat:
// the API key (also without its vendor prefix), the base URL's password and
// credential query values, and credential headers.
func credentials(opts Options) []string {
	all := append([]string{opts.APIKey}, secret.FromURL(opts.BaseURL)...)
	all = append(all, secret.FromHeaders(opts.Headers)...)
	return secret.Literals(all...)
}

// Close releases the provider's idle connections: those of the transport
// New made, or of Options.HTTPClient (which stays usable: a later Step
// opens new ones). Requests in flight are not interrupted; cancel their
// contexts for that. Close is safe to call more than once.
func (p *Provider) Close() error {
	if p.own != nil {
		p.own.CloseIdleConnections()
	} else {
		p.opts.HTTPClient.CloseIdleConnections()
	}
	return nil
}

// splitQuery cuts a base URL into the part go-openai appends paths to and
// its raw query.
func splitQuery(base string) (string, string) {
	u, err := url.Parse(base)
	if err != nil || u.RawQuery == "" && !u.ForceQuery {
		return base, ""
	}
	q := u.RawQuery
	u.RawQuery, u.ForceQuery = "", false
	return u.String(), q
}

// DefaultBackoff waits 500ms before the first retry, doubling each time, at
// most 8s.
func DefaultBackoff(retry int) time.Duration {
	d := 500 * time.Millisecond
	for i := 1; i < retry && d < 8*time.Second; i++ {
		d *= 2
	}
	return min(d, 8*time.Second)
}

// Step sends one chat completion and maps its answer back.
func (p *Provider) Step(ctx context.Context, req *core.Request) (*core.Response, error) {
	resp, _, err := p.StepWithFinishReason(ctx, req)
	return resp, err
}

// StepWithFinishReason is Step that also returns the choice's finish_reason
// (stop, tool_calls, length, content_filter, ...), which core.Response has
// no field for. Recorders use it to keep the reason in a cassette.
func (p *Provider) StepWithFinishReason(ctx context.Context, req *core.Request) (*core.Response, string, error) {
	creq, err := p.chatRequest(req)
	if err != nil {
		return nil, "", err
	}
	cresp, err := p.complete(ctx, creq)
	if err != nil {
		return nil, "", err
	}
	return p.response(req, cresp)
}

// complete runs the attempts of one chat completion.
func (p *Provider) complete(ctx context.Context, creq goopenai.ChatCompletionRequest) (*completion, error) {
	for attempt := 1; ; attempt++ {
		c, e := p.attempt(ctx, creq)
		if e == nil {
			return c, nil
		}
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("openai: chat completion stopped: %w", err)
		}
		e.Attempts = attempt
		if !e.Retryable() || p.opts.MaxRetries < 0 || attempt > p.opts.MaxRetries {
			return nil, e
		}
		delay := p.opts.Backoff(attempt)
		if e.RetryAfter > 0 {
			if e.RetryAfter > p.opts.MaxRetryAfter {
				return nil, e
			}
			delay = e.RetryAfter
		}
		if p.opts.OnRetry != nil {
			p.opts.OnRetry(Retry{Attempt: attempt, Delay: delay, Err: e})
		}
		if err := p.wait(ctx, delay); err != nil {
			return nil, fmt.Errorf("openai: chat completion stopped while waiting to retry (%v): %w", e, err)
		}
	}
}

func (p *Provider) wait(ctx context.Context, d time.Duration) error {
	return core.SleepOn(p.clock, ctx, d)
}

var errAttemptTimeout = errors.New("attempt timed out")

// errBodyTooLarge stops go-openai from decoding a success body that was
// cut at maxBody: it would report the cut as malformed JSON.
var errBodyTooLarge = fmt.Errorf("the response body is larger than %d MiB, the most the provider reads", maxBody>>20)

// completion is a decoded response and what the transport saw of it.
type completion struct {
	resp goopenai.ChatCompletionResponse
	body []byte
}

// attemptMeta is filled by capturingDoer for one attempt.
type attemptMeta struct {
	sent    bool // the request reached the HTTP client
	status  int
	header  http.Header
	body    []byte
	readErr error
	// tooLarge: the body went past maxBody; body holds its start.
	tooLarge bool
	// fillContent: a message has empty content, which go-openai leaves
	// out of the body; capturingDoer puts it back (see withContent).
	fillContent bool
}

// lacksContent reports whether go-openai would send a message without its
// content key: it omits an empty content, and OpenAI refuses a user, system
// or tool message (or an assistant message without tool calls) that has
// none, though an empty tool result or user turn is an ordinary thing.
func lacksContent(msgs []goopenai.ChatCompletionMessage) bool {
	for _, m := range msgs {
		if m.Content == "" && len(m.MultiContent) == 0 && len(m.ToolCalls) == 0 && m.FunctionCall == nil {
			return true
		}
	}
	return false
}

// withContent adds "content":"" to every message of a chat completion body
// that has no content and no tool calls, and leaves the rest as it was.
func withContent(body []byte) ([]byte, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, err
	}
	var msgs []map[string]json.RawMessage
	if err := json.Unmarshal(doc["messages"], &msgs); err != nil {
		return nil, err
	}
	for _, m := range msgs {
		_, hasContent := m["content"]
		_, hasCalls := m["tool_calls"]
		_, hasCall := m["function_call"]
		if !hasContent && !hasCalls && !hasCall {
			m["content"] = json.RawMessage(`""`)
		}
	}
	raw, err := json.Marshal(msgs)
	if err != nil {
		return nil, err
	}
	doc["messages"] = raw
	return json.Marshal(doc)
}

type metaKey struct{}

// attempt makes one HTTP attempt and classifies its failure.
func (p *Provider) attempt(ctx context.Context, creq goopenai.ChatCompletionRequest) (*completion, *Error) {
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var timer clockwork.Timer
	if p.opts.Timeout > 0 {
		// The deadline runs on the injected clock, not context.WithTimeout,
		// so that a test advances it instead of waiting for it.
		timer = p.clock.AfterFunc(p.opts.Timeout, func() { cancel(errAttemptTimeout) })
	}
	meta := &attemptMeta{fillContent: lacksContent(creq.Messages)}
	resp, err := p.client.CreateChatCompletion(context.WithValue(actx, metaKey{}, meta), creq)
	if timer != nil {
		timer.Stop()
	}
	timedOut := errors.Is(context.Cause(actx), errAttemptTimeout)
	if !timedOut && meta.sent && meta.status != 0 && meta.readErr == nil {
		// A whole response arrived: its body is read here, whatever
		// go-openai made of it, so that one rule reads every body.
		switch {
		case meta.status/100 != 2:
			return nil, p.scrub(p.failure(meta))
		case !meta.tooLarge:
			return p.success(meta)
		}
	}
	if err != nil {
		return nil, p.scrub(p.classify(err, meta, timedOut))
	}
	return &completion{resp: resp, body: meta.body}, nil
}

// success reads a whole success body as a chat completion. One that is
// not (not JSON, another shape, an error object sent with a success
// status) is ErrBadResponse: never retried.
func (p *Provider) success(meta *attemptMeta) (*completion, *Error) {
	resp, err := decodeCompletion(meta.body)
	if err == nil {
		return &completion{resp: resp, body: meta.body}, nil
	}
	e := &Error{Kind: ErrBadResponse, URL: p.endpoint, StatusCode: meta.status}
	if se, ok := errorOf(meta.body); ok {
		// Some servers send an error object with a success status.
		e.Message, e.Type, e.Code, e.Param = se.message, se.typ, se.code, se.param
	} else {
		e.Message, e.Body = "not a chat completion: "+err.Error(), snippet(meta.body)
	}
	return nil, p.scrub(e)
}

// failure classifies a whole response with a failure status by the
// status and what its body says.
func (p *Provider) failure(meta *attemptMeta) *Error {
	e := &Error{URL: p.endpoint, StatusCode: meta.status, RetryAfter: retryAfter(meta.header, p.clock.Now())}
	switch se, ok := errorOf(meta.body); {
	case ok:
		e.Message, e.Type, e.Code, e.Param = se.message, se.typ, se.code, se.param
	case len(bytes.TrimSpace(meta.body)) == 0:
		e.Message = "empty body"
	default:
		e.Body = snippet(meta.body)
	}
	e.Kind = kindForStatus(meta.status, e.Type, e.Code)
	return e
}

// Bounds on what an error repeats of what an endpoint said: a server may
// send a message of any length, and an error ends up in logs and reports.
const (
	maxMessage = 512 // Error.Message, in bytes
	maxTag     = 128 // Error.Type, Code and Param
	maxSnippet = 120 // Error.Body
	// snippetSlack is how far past maxSnippet a snippet is kept until it
	// is scrubbed, so that a credential that begins before the cut is
	// found whole and replaced, not shown in part.
	snippetSlack = 64 << 10
	// ellipsis ends a text field that was cut, within its bound.
	ellipsis = "…"
)

// scrub removes the provider's credentials from what an endpoint said (an
// error body that echoes the Authorization header or the request's URL must
// not carry a key into a log, a transcript or a cassette) and then cuts
// each field to its bound, so that a cut never leaves part of a credential
// behind. Which values are secret, and which are too short to replace, is
// internal/secret's rule, the one the cassette redactor follows too. The
// text fields lose their control characters (a message is one line, and
// no endpoint writes escape sequences onto a terminal); Body keeps them,
// since it is shown quoted.
func (p *Provider) scrub(e *Error) *Error {
	longest := 0
	for _, s := range p.secrets {
		longest = max(longest, len(s))
	}
	clip := func(s string, n int, text bool) string {
		cut := false
		if w := n + longest + utf8.UTFMax; len(s) > w {
			s, cut = s[:w], true
		}
		if text {
			s = strings.Map(func(r rune) rune {
				if unicode.IsControl(r) {
					return ' '
				}
				return r
			}, s)
		}
		s = secret.Replace(s, p.secrets)
		if len(s) > n {
			s, cut = s[:n], true
		}
		if cut {
			if text {
				s = s[:min(len(s), n-len(ellipsis))]
			}
			// Back off to a whole character.
			for len(s) > 0 {
				if r, size := utf8.DecodeLastRuneInString(s); r != utf8.RuneError || size > 1 {
					break
				}
				s = s[:len(s)-1]
			}
			if text {
				s += ellipsis
			}
		}
		return s
	}
	e.Message = clip(e.Message, maxMessage, true)
	e.Body = clip(e.Body, maxSnippet, false)
	for _, f := range []*string{&e.Type, &e.Code, &e.Param} {
		*f = clip(*f, maxTag, true)
	}
	return e
}

// classify turns what go-openai and the transport reported into an *Error
// when no whole response arrived (or a success too large to read).
func (p *Provider) classify(err error, meta *attemptMeta, timedOut bool) *Error {
	e := &Error{URL: p.endpoint, StatusCode: meta.status, Err: err}
	if meta.header != nil {
		e.RetryAfter = retryAfter(meta.header, p.clock.Now())
	}
	switch {
	case timedOut:
		e.Kind, e.Err = ErrTimeout, fmt.Errorf("no complete response within %s", p.opts.Timeout)
	case meta.tooLarge && meta.status/100 == 2:
		e.Kind, e.Err, e.Body = ErrBadResponse, nil, snippet(meta.body)
		e.Message = errBodyTooLarge.Error()
	case meta.readErr != nil:
		e.Kind, e.Err = ErrConnection, fmt.Errorf("response body cut short: %w", meta.readErr)
	case !meta.sent:
		// go-openai refused the request before sending it (a model it
		// deems unsuitable for chat, reasoning-model parameter rules).
		e.Kind = ErrBadRequest
	default:
		e.Kind = ErrConnection
	}
	return e
}

// snippet is the start of a body, for Error.Body; scrub cuts it to
// maxSnippet once it is free of credentials.
func snippet(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) > maxSnippet+snippetSlack {
		b = b[:maxSnippet+snippetSlack]
	}
	return string(b)
}

// retryAfter reads how long the server asked to wait: OpenAI's
// retry-after-ms first (finer), then Retry-After in seconds or as an HTTP
// date.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if at, err := http.ParseTime(v); err == nil {
		if d := at.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// withoutQuery rewrites the URL in a transport error (Go's *url.Error
// prints it whole) without user info or query, where credentials travel.
func withoutQuery(err error) error {
	var ue *url.Error
	if !errors.As(err, &ue) {
		return err
	}
	return &url.Error{Op: ue.Op, URL: scrubURL(ue.URL), Err: ue.Err}
}

func endpointForErrors(base string) string {
	return strings.TrimRight(scrubURL(base), "/") + "/chat/completions"
}

// scrubURL drops what may carry credentials from a URL: user info, the
// query and the fragment.
func scrubURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	u.User = nil
	u.RawQuery, u.ForceQuery = "", false
	u.Fragment, u.RawFragment = "", ""
	return u.String()
}

// capturingDoer sends go-openai's requests and keeps, per attempt, the
// status, headers and whole body: go-openai's errors carry neither the
// Retry-After header nor the body of an undecodable success.
type capturingDoer struct {
	client  *http.Client
	headers http.Header
	query   string // the base URL's query, added to every request's
}

func (d *capturingDoer) Do(req *http.Request) (*http.Response, error) {
	for k, vs := range d.headers {
		req.Header[http.CanonicalHeaderKey(k)] = append([]string(nil), vs...)
	}
	if d.query != "" {
		if req.URL.RawQuery == "" {
			req.URL.RawQuery = d.query
		} else {
			req.URL.RawQuery = d.query + "&" + req.URL.RawQuery
		}
	}
	meta, _ := req.Context().Value(metaKey{}).(*attemptMeta)
	if meta != nil {
		meta.sent = true
		if meta.fillContent && req.Body != nil {
			if err := fillContent(req); err != nil {
				return nil, fmt.Errorf("openai: preparing the request body: %w", err)
			}
		}
	}
	resp, err := d.client.Do(req)
	if err != nil {
		return nil, withoutQuery(err)
	}
	body, readErr := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	_ = resp.Body.Close()
	if readErr == nil && len(body) <= maxBody && gzipped(resp) {
		body = gunzip(body)
	}
	// A byte order mark is no part of the JSON after it (RFC 8259 lets
	// a reader ignore it), though Go's decoder refuses it.
	body = bytes.TrimPrefix(body, []byte("\uFEFF"))
	tooLarge := len(body) > maxBody
	if tooLarge {
		// Only the start is kept, for diagnosis. A failure status is
		// still classified by its status; a success cannot be read.
		body = body[:maxBody]
	}
	if meta != nil {
		meta.status, meta.header, meta.body, meta.readErr = resp.StatusCode, resp.Header, body, readErr
		meta.tooLarge = tooLarge
	}
	if readErr != nil {
		return nil, readErr
	}
	if tooLarge && resp.StatusCode/100 == 2 {
		return nil, errBodyTooLarge
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}

// gzipped reports whether a body is still gzip-compressed: the transport
// decompresses only what it asked for itself, not a body a caller's own
// Accept-Encoding header asked for, nor one a server sent unasked.
func gzipped(resp *http.Response) bool {
	if resp.Uncompressed {
		return false
	}
	ce := strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding")))
	return ce == "gzip" || ce == "x-gzip"
}

// gunzip decompresses a gzip body, reading at most one byte past maxBody
// of it (a small body may expand to any size); a body that does not
// decompress is kept as it came, for the decoder to report.
func gunzip(body []byte) []byte {
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		return body
	}
	out, err := io.ReadAll(io.LimitReader(zr, maxBody+1))
	if err != nil && len(out) <= maxBody {
		return body
	}
	return out
}

// fillContent rewrites a request's body with withContent.
func fillContent(req *http.Request) error {
	body, err := io.ReadAll(req.Body)
	_ = req.Body.Close()
	if err != nil {
		return err
	}
	if body, err = withContent(body); err != nil {
		return err
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.ContentLength = int64(len(body))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return nil
}
