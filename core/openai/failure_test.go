package openai_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/jonboulle/clockwork"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/core/openai"
)

// stepResult is the outcome of a Step run on its own goroutine, so that a
// spec can drive the fake clock while the provider waits on it.
type stepResult struct {
	Resp *core.Response
	Err  error
}

func stepAsync(ctx context.Context, p *openai.Provider) <-chan stepResult {
	ch := make(chan stepResult, 1)
	go func() {
		resp, err := p.Step(ctx, &core.Request{Agent: "a", Step: 1, Messages: []core.Message{{Role: core.RoleUser, Content: "hi"}}})
		ch <- stepResult{resp, err}
	}()
	return ch
}

// within guards a blocking receive: it returns as soon as the value is
// there; the timeout only bounds a spec that would otherwise hang.
const within = "10s"

var _ = Describe("Failures over the wire", func() {
	var (
		clock   *clockwork.FakeClock
		retries chan openai.Retry
	)
	BeforeEach(func() {
		clock = clockwork.NewFakeClock()
		retries = make(chan openai.Retry, 16)
	})
	provider := func(srv *chatServer, opts openai.Options) *openai.Provider {
		opts.BaseURL = srv.URL + "/v1"
		opts.HTTPClient = srv.Client()
		opts.Model = "m"
		opts.Clock = clock
		opts.OnRetry = func(r openai.Retry) { retries <- r }
		if opts.Timeout == 0 {
			opts.Timeout = openai.NoTimeout
		}
		if opts.APIKey == "" {
			opts.APIKey = "sk-secret-never-in-errors"
		}
		return openai.New(opts)
	}
	// sequence answers the n-th request with replies[n-1] and the last
	// reply after that.
	sequence := func(replies ...reply) func(int, wireRequest) reply {
		return func(n int, _ wireRequest) reply {
			if n > len(replies) {
				return replies[len(replies)-1]
			}
			return replies[n-1]
		}
	}
	asError := func(err error) *openai.Error {
		var e *openai.Error
		ExpectWithOffset(1, errors.As(err, &e)).To(BeTrue(), "want an *openai.Error, got %T: %v", err, err)
		return e
	}

	It("reports an OpenAI error body as a clear, non-retried ErrBadRequest with its message, type, code and param", func() {
		srv := newChatServer(sequence(reply{Status: 400, Body: `{"error":{"message":"Invalid schema for function 'research'.","type":"invalid_request_error","param":"tools[0].function.parameters","code":"invalid_function_parameters"}}`}))
		defer srv.Close()
		_, err := provider(srv, openai.Options{}).Step(context.Background(), &core.Request{Agent: "a", Step: 1})
		Expect(err).To(MatchError(openai.ErrBadRequest))
		e := asError(err)
		Expect(e.StatusCode).To(Equal(400))
		Expect(e.Message).To(Equal("Invalid schema for function 'research'."))
		Expect(e.Type).To(Equal("invalid_request_error"))
		Expect(e.Code).To(Equal("invalid_function_parameters"))
		Expect(e.Param).To(Equal("tools[0].function.parameters"))
		Expect(err.Error()).To(ContainSubstring("HTTP 400 Bad Request"))
		Expect(err.Error()).To(ContainSubstring("Invalid schema for function 'research'."))
		Expect(srv.count()).To(Equal(1), "a refused request is not retried")
		Expect(retries).To(BeEmpty())
	})

	It("reports 401 as ErrAuth without retrying and without the API key in the message", func() {
		srv := newChatServer(sequence(errorReply(401, "Incorrect API key provided: sk-secr***rors.", "invalid_request_error", "invalid_api_key", nil)))
		defer srv.Close()
		_, err := provider(srv, openai.Options{}).Step(context.Background(), &core.Request{Agent: "a", Step: 1})
		Expect(err).To(MatchError(openai.ErrAuth))
		Expect(err.Error()).NotTo(ContainSubstring("sk-secret-never-in-errors"))
		Expect(srv.count()).To(Equal(1))
	})

	It("waits exactly the Retry-After of a 429 on the clock, then retries and succeeds", func() {
		srv := newChatServer(sequence(
			errorReply(429, "Rate limit reached for requests", "requests", "rate_limit_exceeded", map[string]string{"Retry-After": "2"}),
			textReply("after the wait")))
		defer srv.Close()
		done := stepAsync(context.Background(), provider(srv, openai.Options{}))

		var r openai.Retry
		Eventually(retries, within).Should(Receive(&r))
		Expect(r.Attempt).To(Equal(1))
		Expect(r.Delay).To(Equal(2 * time.Second))
		Expect(r.Err).To(MatchError(openai.ErrRateLimited))
		Expect(r.Err.RetryAfter).To(Equal(2 * time.Second))

		Expect(clock.BlockUntilContext(ctxWithin(), 1)).To(Succeed())
		clock.Advance(2*time.Second - time.Millisecond)
		Expect(srv.count()).To(Equal(1), "no retry before the server's Retry-After has passed")
		clock.Advance(time.Millisecond)

		var res stepResult
		Eventually(done, within).Should(Receive(&res))
		Expect(res.Err).NotTo(HaveOccurred())
		Expect(res.Resp.Text).To(Equal("after the wait"))
		Expect(srv.count()).To(Equal(2))
	})

	It("prefers OpenAI's finer retry-after-ms over Retry-After", func() {
		srv := newChatServer(sequence(
			errorReply(429, "slow down", "tokens", "rate_limit_exceeded", map[string]string{"Retry-After": "1", "retry-after-ms": "250"}),
			textReply("ok")))
		defer srv.Close()
		done := stepAsync(context.Background(), provider(srv, openai.Options{}))
		var r openai.Retry
		Eventually(retries, within).Should(Receive(&r))
		Expect(r.Delay).To(Equal(250 * time.Millisecond))
		Expect(clock.BlockUntilContext(ctxWithin(), 1)).To(Succeed())
		clock.Advance(250 * time.Millisecond)
		Eventually(done, within).Should(Receive(HaveField("Err", BeNil())))
	})

	It("reads a Retry-After given as an HTTP date against the clock", func() {
		clock = clockwork.NewFakeClockAt(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
		at := clock.Now().Add(3 * time.Second).Format(http.TimeFormat)
		srv := newChatServer(sequence(errorReply(429, "busy", "requests", "rate_limit_exceeded", map[string]string{"Retry-After": at}), textReply("ok")))
		defer srv.Close()
		done := stepAsync(context.Background(), provider(srv, openai.Options{}))
		var r openai.Retry
		Eventually(retries, within).Should(Receive(&r))
		Expect(r.Delay).To(Equal(3 * time.Second))
		Expect(clock.BlockUntilContext(ctxWithin(), 1)).To(Succeed())
		clock.Advance(3 * time.Second)
		Eventually(done, within).Should(Receive(HaveField("Err", BeNil())))
	})

	It("returns a Retry-After longer than MaxRetryAfter at once instead of stalling the run", func() {
		srv := newChatServer(sequence(errorReply(429, "Rate limit reached", "requests", "rate_limit_exceeded", map[string]string{"Retry-After": "3600"})))
		defer srv.Close()
		_, err := provider(srv, openai.Options{MaxRetryAfter: time.Minute}).Step(context.Background(), &core.Request{Agent: "a", Step: 1})
		Expect(err).To(MatchError(openai.ErrRateLimited))
		Expect(asError(err).RetryAfter).To(Equal(time.Hour))
		Expect(err.Error()).To(ContainSubstring("retry after 1h0m0s"))
		Expect(srv.count()).To(Equal(1))
	})

	It("never retries a 429 for an exhausted quota", func() {
		srv := newChatServer(sequence(errorReply(429, "You exceeded your current quota.", "insufficient_quota", "insufficient_quota", nil)))
		defer srv.Close()
		_, err := provider(srv, openai.Options{}).Step(context.Background(), &core.Request{Agent: "a", Step: 1})
		Expect(err).To(MatchError(openai.ErrQuotaExceeded))
		Expect(err).NotTo(MatchError(openai.ErrRateLimited))
		Expect(srv.count()).To(Equal(1))
	})

	It("retries 5xx with exponential backoff on the clock and gives up after MaxRetries with ErrServer", func() {
		srv := newChatServer(sequence(reply{Status: 500, Body: `{"error":{"message":"The server had an error while processing your request.","type":"server_error","code":null}}`}))
		defer srv.Close()
		done := stepAsync(context.Background(), provider(srv, openai.Options{MaxRetries: 2}))
		for i, want := range []time.Duration{500 * time.Millisecond, time.Second} {
			var r openai.Retry
			Eventually(retries, within).Should(Receive(&r))
			Expect(r.Attempt).To(Equal(i + 1))
			Expect(r.Delay).To(Equal(want))
			Expect(clock.BlockUntilContext(ctxWithin(), 1)).To(Succeed())
			clock.Advance(want)
		}
		var res stepResult
		Eventually(done, within).Should(Receive(&res))
		Expect(res.Err).To(MatchError(openai.ErrServer))
		e := asError(res.Err)
		Expect(e.Attempts).To(Equal(3))
		Expect(e.StatusCode).To(Equal(500))
		Expect(res.Err.Error()).To(ContainSubstring("gave up after 3 attempts"))
		Expect(srv.count()).To(Equal(3))
	})

	It("retries a 502 whose body is an HTML page from a proxy, and shows the body when it gives up", func() {
		srv := newChatServer(sequence(reply{Status: 502, Header: map[string]string{"Content-Type": "text/html"}, Body: "<html><body>Bad Gateway</body></html>"}))
		defer srv.Close()
		_, err := provider(srv, openai.Options{MaxRetries: openai.NoRetries}).Step(context.Background(), &core.Request{Agent: "a", Step: 1})
		Expect(err).To(MatchError(openai.ErrServer))
		Expect(asError(err).Body).To(Equal("<html><body>Bad Gateway</body></html>"))
		Expect(err.Error()).To(ContainSubstring("Bad Gateway"))
	})

	It("reports a garbage body with a success status as ErrBadResponse, showing the start of the body, without retrying", func() {
		srv := newChatServer(sequence(reply{Body: "this is not JSON at all"}))
		defer srv.Close()
		_, err := provider(srv, openai.Options{}).Step(context.Background(), &core.Request{Agent: "a", Step: 1})
		Expect(err).To(MatchError(openai.ErrBadResponse))
		Expect(asError(err).Body).To(Equal("this is not JSON at all"))
		Expect(err.Error()).To(ContainSubstring("not a chat completion"))
		Expect(srv.count()).To(Equal(1))
	})

	It("reports truncated JSON that arrived whole as ErrBadResponse", func() {
		srv := newChatServer(sequence(reply{Body: `{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assis`}))
		defer srv.Close()
		_, err := provider(srv, openai.Options{}).Step(context.Background(), &core.Request{Agent: "a", Step: 1})
		Expect(err).To(MatchError(openai.ErrBadResponse))
	})

	It("reports a success whose body is over the 32 MiB it reads as ErrBadResponse saying so, without retrying", func() {
		huge := `{"choices":[{"message":{"role":"assistant","content":"` + strings.Repeat("a", 32<<20) + `"}}]}`
		srv := newChatServer(sequence(reply{Status: http.StatusOK, Body: huge}))
		defer srv.Close()
		_, err := provider(srv, openai.Options{}).Step(context.Background(), &core.Request{Agent: "a", Step: 1})
		Expect(err).To(MatchError(openai.ErrBadResponse))
		Expect(err.Error()).To(ContainSubstring("the response body is larger than 32 MiB"))
		Expect(err.Error()).NotTo(ContainSubstring("EOF"), "the body is not malformed; it is too large")
		Expect(srv.count()).To(Equal(1))
		Expect(retries).To(BeEmpty())
	})

	It("treats a body cut short by a dropped connection as ErrConnection and retries it", func() {
		cut := reply{Raw: "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 400\r\n\r\n{\"id\":\"chatcmpl-1\",\"choices\":["}
		srv := newChatServer(sequence(cut, textReply("second time lucky")))
		defer srv.Close()
		done := stepAsync(context.Background(), provider(srv, openai.Options{}))
		var r openai.Retry
		Eventually(retries, within).Should(Receive(&r))
		Expect(r.Err).To(MatchError(openai.ErrConnection))
		Expect(r.Err.Error()).To(ContainSubstring("cut short"))
		Expect(clock.BlockUntilContext(ctxWithin(), 1)).To(Succeed())
		clock.Advance(r.Delay)
		var res stepResult
		Eventually(done, within).Should(Receive(&res))
		Expect(res.Err).NotTo(HaveOccurred())
		Expect(res.Resp.Text).To(Equal("second time lucky"))
	})

	It("reports an error object sent with a 200 as ErrBadResponse with its message", func() {
		srv := newChatServer(sequence(reply{Body: `{"error":{"message":"model 'llama3' not found, try pulling it first","type":"api_error"}}`}))
		defer srv.Close()
		_, err := provider(srv, openai.Options{}).Step(context.Background(), &core.Request{Agent: "a", Step: 1})
		Expect(err).To(MatchError(openai.ErrBadResponse))
		Expect(asError(err).Message).To(Equal("model 'llama3' not found, try pulling it first"))
	})

	It("reports a completion without choices as ErrBadResponse", func() {
		srv := newChatServer(sequence(reply{Body: `{"id":"x","object":"chat.completion","choices":[]}`}))
		defer srv.Close()
		_, err := provider(srv, openai.Options{}).Step(context.Background(), &core.Request{Agent: "a", Step: 1})
		Expect(err).To(MatchError(openai.ErrBadResponse))
		Expect(err.Error()).To(ContainSubstring(`"choices" is empty`))
	})

	It("cuts off an attempt that runs past Timeout on the clock with ErrTimeout, then retries", func() {
		arrived := make(chan struct{})
		srv := newChatServer(sequence(reply{Hang: true, Arrived: arrived}, textReply("fast this time")))
		defer srv.Close()
		done := stepAsync(context.Background(), provider(srv, openai.Options{Timeout: 30 * time.Second}))
		Eventually(arrived, within).Should(BeClosed())
		clock.Advance(30 * time.Second)
		var r openai.Retry
		Eventually(retries, within).Should(Receive(&r))
		Expect(r.Err).To(MatchError(openai.ErrTimeout))
		Expect(r.Err.Error()).To(ContainSubstring("no complete response within 30s"))
		Expect(clock.BlockUntilContext(ctxWithin(), 1)).To(Succeed(), "the backoff timer; the timed-out attempt's timer has fired")
		clock.Advance(r.Delay)
		var res stepResult
		Eventually(done, within).Should(Receive(&res))
		Expect(res.Err).NotTo(HaveOccurred())
		Expect(res.Resp.Text).To(Equal("fast this time"))
	})

	It("aborts an in-flight request at once when the context is cancelled, with an error the runtime reads as cancellation", func() {
		arrived := make(chan struct{})
		srv := newChatServer(sequence(reply{Hang: true, Arrived: arrived}))
		defer srv.Close()
		ctx, cancel := context.WithCancel(context.Background())
		done := stepAsync(ctx, provider(srv, openai.Options{}))
		Eventually(arrived, within).Should(BeClosed())
		cancel()
		var res stepResult
		Eventually(done, within).Should(Receive(&res))
		Expect(res.Err).To(MatchError(context.Canceled))
		Expect(srv.count()).To(Equal(1))
		Expect(retries).To(BeEmpty(), "a cancelled call is never retried")
	})

	It("stops waiting to retry when the context is cancelled during the backoff", func() {
		srv := newChatServer(sequence(reply{Status: 503, Body: `{"error":{"message":"overloaded","type":"server_error"}}`}))
		defer srv.Close()
		ctx, cancel := context.WithCancel(context.Background())
		done := stepAsync(ctx, provider(srv, openai.Options{}))
		Eventually(retries, within).Should(Receive())
		Expect(clock.BlockUntilContext(ctxWithin(), 1)).To(Succeed())
		cancel()
		var res stepResult
		Eventually(done, within).Should(Receive(&res))
		Expect(res.Err).To(MatchError(context.Canceled))
		Expect(res.Err.Error()).To(ContainSubstring("overloaded"), "the error says what was being retried")
		Expect(srv.count()).To(Equal(1))
	})

	It("reports a refused connection as ErrConnection, naming the endpoint but not the base URL's query, where credentials travel", func() {
		srv := newChatServer(sequence(textReply("unused")))
		url, client := srv.URL, srv.Client()
		srv.Close()
		p := openai.New(openai.Options{BaseURL: url + "/v1?api-key=Qk7vTz91&sig=S1gN4tur3", HTTPClient: client, Model: "m", Clock: clock, MaxRetries: openai.NoRetries})
		_, err := p.Step(context.Background(), &core.Request{Agent: "a", Step: 1})
		Expect(err).To(MatchError(openai.ErrConnection))
		Expect(err.Error()).To(ContainSubstring(url + "/v1/chat/completions"))
		Expect(err.Error()).NotTo(ContainSubstring("Qk7vTz91"))
		Expect(err.Error()).NotTo(ContainSubstring("S1gN4tur3"))
	})

	It("never repeats the API key when the endpoint's error body echoes it", func() {
		const key = "sk-echo-9f8e7d6c5b4a"
		srv := newChatServer(sequence(errorReply(http.StatusUnauthorized, "Incorrect API key provided: "+key+".", "invalid_request_error", "invalid_api_key", nil)))
		defer srv.Close()
		_, err := provider(srv, openai.Options{APIKey: key}).Step(context.Background(), &core.Request{Agent: "a", Step: 1})
		Expect(err).To(MatchError(openai.ErrAuth))
		Expect(err.Error()).To(ContainSubstring("Incorrect API key provided: [REDACTED]."))
		Expect(err.Error()).NotTo(ContainSubstring(key))
	})

	It("never puts user info from the base URL into an error", func() {
		srv := newChatServer(sequence(reply{Status: http.StatusBadRequest, Body: `{"error":{"message":"no","type":"invalid_request_error"}}`}))
		defer srv.Close()
		p := openai.New(openai.Options{BaseURL: "http://user:hunter2@" + srv.Listener.Addr().String() + "/v1",
			HTTPClient: srv.Client(), Model: "m", Clock: clock})
		_, err := p.Step(context.Background(), &core.Request{Agent: "a", Step: 1})
		Expect(err).To(MatchError(openai.ErrBadRequest))
		Expect(err.Error()).NotTo(ContainSubstring("hunter2"))
	})

	It("never repeats a credential it was given when the endpoint echoes it: the key without its prefix, the base URL's password and credential query values, credential headers", func() {
		echoes := map[string]reply{
			"an error object":                errorReply(http.StatusUnauthorized, "rejected Q2x9WvT4mZ7yK1nB8cR3 for bob:Hunt3rPassw0rd at api-key=AzK3yV4lu3x, token T0k3nV4lu3xyz, X-Gateway-Key Gw4yS3cr3tV4l", "invalid_request_error", "Q2x9WvT4mZ7yK1nB8cR3", nil),
			"a body that is not an error":    {Status: http.StatusBadGateway, Body: "<html>Q2x9WvT4mZ7yK1nB8cR3 Hunt3rPassw0rd AzK3yV4lu3x T0k3nV4lu3xyz Gw4yS3cr3tV4l</html>"},
			"an error object with a 200":     {Status: http.StatusOK, Body: `{"error":{"message":"Q2x9WvT4mZ7yK1nB8cR3 Hunt3rPassw0rd AzK3yV4lu3x T0k3nV4lu3xyz Gw4yS3cr3tV4l","type":"AzK3yV4lu3x"}}`},
			"a success that does not decode": {Status: http.StatusOK, Body: "garbage Q2x9WvT4mZ7yK1nB8cR3 Hunt3rPassw0rd AzK3yV4lu3x T0k3nV4lu3xyz Gw4yS3cr3tV4l"},
		}
		for what, rep := range echoes {
			srv := newChatServer(sequence(rep))
			p := openai.New(openai.Options{
				BaseURL:    "http://bob:Hunt3rPassw0rd@" + srv.Listener.Addr().String() + "/v1?api-version=2024-10-21&api-key=AzK3yV4lu3x&token=T0k3nV4lu3xyz",
				APIKey:     "sk-proj-Q2x9WvT4mZ7yK1nB8cR3",
				Headers:    http.Header{"X-Gateway-Key": {"Gw4yS3cr3tV4l"}, "X-Title": {"leaves-demo-app"}},
				HTTPClient: srv.Client(), Model: "m", Clock: clock, MaxRetries: openai.NoRetries,
			})
			_, err := p.Step(context.Background(), &core.Request{Agent: "a", Step: 1})
			srv.Close()
			Expect(err).To(HaveOccurred(), what)
			for _, secret := range []string{"Q2x9WvT4mZ7yK1nB8cR3", "Hunt3rPassw0rd", "AzK3yV4lu3x", "T0k3nV4lu3xyz", "Gw4yS3cr3tV4l"} {
				Expect(err.Error()).NotTo(ContainSubstring(secret), "%s: %v", what, err)
			}
			Expect(err.Error()).To(ContainSubstring("[REDACTED]"), what)
		}
	})
})

// ctxWithin bounds a wait on the fake clock's waiters the way within bounds
// a receive.
func ctxWithin() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	DeferCleanup(cancel)
	return ctx
}
