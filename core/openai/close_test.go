package openai_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/core/openai"
)

var _ = Describe("Closing a provider", func() {
	// A server that reports each connection the client closes.
	serve := func() (*httptest.Server, <-chan struct{}) {
		closed := make(chan struct{}, 8)
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(textReply("ok").Body))
		}))
		srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
			if st == http.StateClosed {
				closed <- struct{}{}
			}
		}
		srv.Start()
		DeferCleanup(srv.Close)
		return srv, closed
	}
	waitClosed := func(closed <-chan struct{}) {
		EventuallyWithOffset(1, closed, within).Should(Receive(), "the provider's connection stayed open after Close")
	}
	req := &core.Request{Agent: "a", Step: 1, Messages: []core.Message{{Role: core.RoleUser, Content: "hi"}}}

	It("releases the connections of the transport it made itself", func() {
		srv, closed := serve()
		p := openai.New(openai.Options{BaseURL: srv.URL + "/v1", Model: "m"})
		_, err := p.Step(context.Background(), req)
		Expect(err).NotTo(HaveOccurred())
		Expect(closed).To(BeEmpty(), "the connection is kept alive between steps")
		Expect(p.Close()).To(Succeed())
		waitClosed(closed)
		Expect(p.Close()).To(Succeed(), "a second Close is harmless")
	})

	It("releases the idle connections of a client it was given, which stays usable", func() {
		srv, closed := serve()
		p := openai.New(openai.Options{BaseURL: srv.URL + "/v1", Model: "m", HTTPClient: &http.Client{Transport: &http.Transport{}}})
		_, err := p.Step(context.Background(), req)
		Expect(err).NotTo(HaveOccurred())
		Expect(p.Close()).To(Succeed())
		waitClosed(closed)
		_, err = p.Step(context.Background(), req)
		Expect(err).NotTo(HaveOccurred())
		Expect(p.Close()).To(Succeed())
		waitClosed(closed)
	})
})
