package cassette_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/harness/cassette"
)

var _ = Describe("Reading a cassette", func() {
	var good []byte
	BeforeEach(func() {
		good, _ = recorded(cassette.RecordOptions{Header: cassette.Header{Scenario: "leaves", CruxSim: "v0.1.0-test"}}, session{}, nil)
	})

	// edit replaces line n (from 1) with f of it.
	edit := func(n int, f func(string) string) []byte {
		ls := lines(good)
		ls[n-1] = f(ls[n-1])
		return []byte(strings.Join(ls, "\n") + "\n")
	}
	readErr := func(b []byte) *cassette.FormatError {
		_, err := cassette.Read(bytes.NewReader(b), "leaves.cassette")
		var fe *cassette.FormatError
		ExpectWithOffset(1, errors.As(err, &fe)).To(BeTrue(), "want a *FormatError, got %v", err)
		return fe
	}

	It("reads back what was recorded, exchange for exchange", func() {
		c := mustRead(good, "leaves.cassette")
		Expect(c.Header.Scenario).To(Equal("leaves"))
		Expect(c.Exchanges).To(HaveLen(5))
		for i, x := range c.Exchanges {
			Expect(x.Seq).To(Equal(i + 1))
			Expect(x.Line).To(Equal(2 + 2*i))
		}
	})

	It("writes back, through Cassette.Write, the same bytes it read", func() {
		var buf bytes.Buffer
		Expect(mustRead(good, "x").Write(&buf)).To(Succeed())
		Expect(buf.String()).To(Equal(string(good)))
	})

	It("reads a file from disk and names it in errors", func() {
		dir := GinkgoT().TempDir()
		path := filepath.Join(dir, "cut.cassette")
		Expect(os.WriteFile(path, good[:len(good)-20], 0o644)).To(Succeed())
		_, err := cassette.ReadFile(path)
		Expect(err).To(MatchError(cassette.ErrTruncated))
		Expect(err.Error()).To(HavePrefix(path + ":12:"))
		_, err = cassette.ReadFile(filepath.Join(dir, "absent.cassette"))
		Expect(err).To(MatchError(os.ErrNotExist))
	})

	Describe("a truncated file", func() {
		It("names the line and column where a file cut in the middle of a line ends", func() {
			cut := good[:len(good)-len(`{"kind":"end","exchanges":5}`+"\n")-40]
			fe := readErr(cut)
			Expect(fe).To(MatchError(cassette.ErrTruncated))
			Expect(fe.Line).To(Equal(11))
			Expect(fe.Column).To(BeNumerically(">", 1))
			Expect(fe.Error()).To(MatchRegexp(`^leaves\.cassette:11:\d+: cassette is truncated: the last line is cut short`))
		})

		It("reports a file that stops between exchanges, without its end line", func() {
			ls := lines(good)
			fe := readErr([]byte(strings.Join(ls[:len(ls)-1], "\n") + "\n"))
			Expect(fe).To(MatchError(cassette.ErrTruncated))
			Expect(fe.Line).To(Equal(11))
			Expect(fe.Error()).To(Equal("leaves.cassette:11: cassette is truncated: the file ends after 5 exchange(s) without its end line; the recording was interrupted or the file was cut short"))
		})

		It("reports a file that stops after a request, before its response", func() {
			ls := lines(good)
			fe := readErr([]byte(strings.Join(ls[:len(ls)-2], "\n") + "\n"))
			Expect(fe).To(MatchError(cassette.ErrTruncated))
			Expect(fe.Error()).To(Equal("leaves.cassette:10: cassette is truncated: the file ends after the request of exchange 5, without its response"))
		})
	})

	Describe("an edited file", func() {
		It("names the line and column of broken JSON", func() {
			fe := readErr(edit(4, func(l string) string { return strings.Replace(l, `"seq":2,`, `"seq":2,,`, 1) }))
			Expect(fe).To(MatchError(cassette.ErrMalformed))
			Expect(fe.Line).To(Equal(4))
			Expect(fe.Column).To(Equal(strings.Index(lines(good)[3], `"seq":2,`) + len(`"seq":2,`) + 1))
			Expect(fe.Error()).To(ContainSubstring("invalid JSON: invalid character ','"))
		})

		It("names the line and column of an unknown key, so a typo is not silently ignored", func() {
			fe := readErr(edit(3, func(l string) string { return strings.Replace(l, `"duration"`, `"durration"`, 1) }))
			Expect(fe).To(MatchError(cassette.ErrMalformed))
			Expect(fe.Line).To(Equal(3))
			Expect(fe.Column).To(Equal(strings.Index(lines(good)[2], `"duration"`) + 1))
			Expect(fe.Error()).To(ContainSubstring(`unknown key "durration"`))
		})

		It("names a value of the wrong type", func() {
			fe := readErr(edit(2, func(l string) string { return strings.Replace(l, `"step":1,`, `"step":"one",`, 1) }))
			Expect(fe).To(MatchError(cassette.ErrMalformed))
			Expect(fe.Line).To(Equal(2))
			Expect(fe.Column).To(BeNumerically(">", 1))
			Expect(fe.Error()).To(ContainSubstring("step has the wrong type"))
		})

		It("notices exchanges removed from the middle", func() {
			ls := lines(good)
			cut := append(append([]string{}, ls[:3]...), ls[5:]...)
			fe := readErr([]byte(strings.Join(cut, "\n") + "\n"))
			Expect(fe).To(MatchError(cassette.ErrMalformed))
			Expect(fe.Line).To(Equal(4))
			Expect(fe.Error()).To(ContainSubstring("exchange seq is 3, want 2: exchanges were removed, added or reordered"))
		})

		It("notices a response that does not belong to the request before it", func() {
			fe := readErr(edit(5, func(l string) string { return strings.Replace(l, `"seq":2,`, `"seq":3,`, 1) }))
			Expect(fe.Line).To(Equal(5))
			Expect(fe.Error()).To(ContainSubstring("response seq is 3, but the request before it (line 4) is exchange 2"))
		})

		It("notices a request without its response", func() {
			ls := lines(good)
			cut := append(append([]string{}, ls[:2]...), ls[3:]...)
			fe := readErr([]byte(strings.Join(cut, "\n") + "\n"))
			Expect(fe.Line).To(Equal(3))
			Expect(fe.Error()).To(ContainSubstring("exchange 1's request (line 2) has no response line before this request"))
		})

		It("notices an end line that miscounts, and lines after the end", func() {
			fe := readErr(edit(12, func(string) string { return `{"kind":"end","exchanges":4}` }))
			Expect(fe.Line).To(Equal(12))
			Expect(fe.Error()).To(ContainSubstring("the end line counts 4 exchange(s), the file has 5"))
			fe = readErr(append(append([]byte{}, good...), lines(good)[1]+"\n"...))
			Expect(fe.Line).To(Equal(13))
			Expect(fe.Error()).To(ContainSubstring(`a "request" line follows the end line`))
		})

		It("points at the message whose role is unknown", func() {
			b := edit(6, func(l string) string { return strings.Replace(l, `"role":"tool"`, `"role":"robot"`, 1) })
			fe := readErr(b)
			Expect(fe.Line).To(Equal(6))
			Expect(fe.Column).To(Equal(strings.Index(lines(b)[5], `"role":"robot"`) + 1))
			Expect(fe.Error()).To(ContainSubstring(`request.messages[2].role: unknown role "robot"`))
		})

		It("refuses an output schema that no longer compiles", func() {
			fe := readErr(edit(4, func(l string) string { return strings.Replace(l, `"type":"object"`, `"type":17`, 1) }))
			Expect(fe.Line).To(Equal(4))
			Expect(fe.Error()).To(ContainSubstring("request.output"))
		})

		It("refuses a duration that is not one", func() {
			fe := readErr(edit(2, func(l string) string { return strings.Replace(l, `"at":"0s"`, `"at":"soon"`, 1) }))
			Expect(fe.Line).To(Equal(2))
			Expect(fe.Column).To(Equal(strings.Index(lines(good)[1], `"at"`) + 1))
			Expect(fe.Error()).To(ContainSubstring(`at is not a non-negative duration such as "1.5s": "soon"`))
		})

		It("refuses a response line with both a response and an error, or neither", func() {
			fe := readErr(edit(3, func(l string) string {
				return strings.Replace(l, `"response":{`, `"error":{"kind":"provider","message":"x"},"response":{`, 1)
			}))
			Expect(fe.Error()).To(ContainSubstring("exactly one of response and error"))
		})

		It("refuses an unknown error kind and points at it", func() {
			b := edit(3, func(l string) string {
				i := strings.Index(l, `"response":{`)
				return l[:i] + `"error":{"kind":"gremlins","message":"x"}}`
			})
			fe := readErr(b)
			Expect(fe.Line).To(Equal(3))
			Expect(fe.Column).To(Equal(strings.Index(lines(b)[2], `"kind":"gremlins"`) + 1))
			Expect(fe.Error()).To(ContainSubstring(`error kind "gremlins"`))
		})

		It("refuses steps of a run that go backwards", func() {
			ls := lines(good)
			// Swap the coordinator's steps 3 and 4 (exchanges 4 and 5),
			// renumbering so that only the step order is wrong.
			swapped := append([]string{}, ls...)
			swapped[7] = strings.Replace(ls[9], `"seq":5`, `"seq":4`, 1)
			swapped[8] = strings.Replace(ls[10], `"seq":5`, `"seq":4`, 1)
			swapped[9] = strings.Replace(ls[7], `"seq":4`, `"seq":5`, 1)
			swapped[10] = strings.Replace(ls[8], `"seq":4`, `"seq":5`, 1)
			fe := readErr([]byte(strings.Join(swapped, "\n") + "\n"))
			Expect(fe.Line).To(Equal(10))
			Expect(fe.Error()).To(ContainSubstring("step 3 of research-coordinator run 1 follows its step 4"))
		})

		It("accepts blank lines and a missing final newline", func() {
			b := bytes.Replace(good, []byte("\n"), []byte("\n\n"), 3)
			b = bytes.TrimRight(b, "\n")
			c, err := cassette.Read(bytes.NewReader(b), "x")
			Expect(err).NotTo(HaveOccurred())
			Expect(c.Exchanges).To(HaveLen(5))
		})
	})

	Describe("a file of another version or kind", func() {
		It("refuses a newer version, naming it, before looking at keys it may not know", func() {
			b := edit(1, func(string) string {
				return `{"kind":"header","format":"crux-sim-cassette","version":2,"compression":"zstd"}`
			})
			fe := readErr(b)
			Expect(fe).To(MatchError(cassette.ErrVersion))
			Expect(fe.Line).To(Equal(1))
			Expect(fe.Column).To(Equal(strings.Index(lines(b)[0], `"version"`) + 1))
			Expect(fe.Error()).To(Equal(`leaves.cassette:1:` + strconv.Itoa(fe.Column) + `: unsupported cassette version: version 2 is newer than this crux-sim reads (1); upgrade crux-sim or re-record`))
		})

		It("refuses a file without a version", func() {
			fe := readErr(edit(1, func(string) string { return `{"kind":"header","format":"crux-sim-cassette"}` }))
			Expect(fe).To(MatchError(cassette.ErrVersion))
			Expect(fe.Error()).To(ContainSubstring("version 0 is not one this crux-sim reads (1)"))
		})

		It("refuses a file that is not a cassette at all", func() {
			for _, b := range []string{"", "hello\n", `{"kind":"request","seq":1}` + "\n", `{"kind":"header","format":"vcr","version":1}` + "\n"} {
				fe := readErr([]byte(b))
				Expect(fe).To(MatchError(cassette.ErrNotCassette), "for %q", b)
			}
		})
	})
})
