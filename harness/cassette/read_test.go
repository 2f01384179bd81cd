package cassette_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
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
			Expect(fe.Error()).To(ContainSubstring(`request.messages[1].role: unknown role "robot"`), "the index is in the line, which holds only the request's new messages")
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
			// The coordinator's step 4 (exchange 5) renumbered as step 2,
			// request and response alike.
			back := append([]string{}, ls...)
			back[9] = strings.Replace(ls[9], `"step":4`, `"step":2`, 1)
			back[10] = strings.Replace(ls[10], `"step":4`, `"step":2`, 1)
			fe := readErr([]byte(strings.Join(back, "\n") + "\n"))
			Expect(fe.Line).To(Equal(10))
			Expect(fe.Error()).To(ContainSubstring("step 2 of research-coordinator run 1 follows its step 3; steps of a run only go up"))
		})

		It("accepts blank lines and a missing final newline", func() {
			b := bytes.Replace(good, []byte("\n"), []byte("\n\n"), 3)
			b = bytes.TrimRight(b, "\n")
			c, err := cassette.Read(bytes.NewReader(b), "x")
			Expect(err).NotTo(HaveOccurred())
			Expect(c.Exchanges).To(HaveLen(5))
		})
	})

	Describe("a hostile file", func() {
		It("takes keys as they are spelled: KIND or finishReasOn is an unknown key, named with its line and column", func() {
			b := edit(1, func(l string) string { return strings.Replace(l, `"kind"`, `"KIND"`, 1) })
			fe := readErr(b)
			Expect(fe).To(MatchError(cassette.ErrNotCassette))
			Expect(fe.Line).To(Equal(1))

			b = edit(4, func(l string) string { return strings.Replace(l, `"kind"`, `"KIND"`, 1) })
			fe = readErr(b)
			Expect(fe).To(MatchError(cassette.ErrMalformed))
			Expect(fe.Error()).To(Equal(`leaves.cassette:4:2: malformed cassette: unknown key "KIND" (keys are case-sensitive: did you mean "kind"?)`))

			b = edit(5, func(l string) string { return strings.Replace(l, `"finishReason"`, `"finishReasOn"`, 1) })
			fe = readErr(b)
			Expect(fe).To(MatchError(cassette.ErrMalformed))
			Expect(fe.Line).To(Equal(5))
			Expect(fe.Column).To(Equal(strings.Index(lines(b)[4], `"finishReasOn"`) + 1))
			Expect(fe.Error()).To(ContainSubstring(`unknown key "finishReasOn" (keys are case-sensitive: did you mean "finishReason"?)`))
		})

		It("refuses a key that appears twice, which a decoder would silently resolve", func() {
			b := edit(3, func(l string) string {
				return strings.Replace(l, `"kind":"response",`, `"kind":"response","kind":"header",`, 1)
			})
			fe := readErr(b)
			Expect(fe).To(MatchError(cassette.ErrMalformed))
			Expect(fe.Error()).To(Equal(`leaves.cassette:3:20: malformed cassette: key "kind" appears twice`))
		})

		It("accepts a UTF-8 byte order mark at the start", func() {
			c, err := cassette.Read(bytes.NewReader(append([]byte("\xef\xbb\xbf"), good...)), "bom.cassette")
			Expect(err).NotTo(HaveOccurred())
			Expect(c.Exchanges).To(HaveLen(5))
		})

		It("says a file cut inside its header is truncated", func() {
			for _, n := range []int{1, 10, 30, len(lines(good)[0]) - 1} {
				fe := readErr(good[:n])
				Expect(fe).To(MatchError(cassette.ErrTruncated), "cut after %d bytes", n)
				Expect(fe.Line).To(Equal(1))
				Expect(fe.Error()).To(ContainSubstring("the header line is cut short"))
			}
		})

		It("reads within a size limit, and says which limit and how to raise it", func() {
			_, err := cassette.Read(bytes.NewReader(good), "leaves.cassette", cassette.ReadOptions{MaxBytes: 1 << 10})
			Expect(err).To(MatchError(cassette.ErrTooLarge))
			Expect(err.Error()).To(Equal("leaves.cassette: cassette is too large: the file is larger than the limit of 1 KiB; raise ReadOptions.MaxBytes (crux-sim: --max-cassette-size) to read it"))
			_, err = cassette.Read(bytes.NewReader(good), "leaves.cassette", cassette.ReadOptions{MaxBytes: int64(len(good))})
			Expect(err).NotTo(HaveOccurred(), "a file exactly at the limit is read")
		})

		It("stops at a size limit without reading an endless stream", func() {
			endless := &countingReader{r: zeros{}}
			_, err := cassette.Read(endless, "/dev/zero", cassette.ReadOptions{MaxBytes: 1 << 16})
			Expect(err).To(HaveOccurred())
			Expect(endless.n).To(BeNumerically("<=", 1<<16+4096), "it read %d bytes", endless.n)
		})

		It("refuses nesting deeper than the depth limit before decoding the line", func() {
			deep := strings.Repeat("[", 100) + strings.Repeat("]", 100)
			b := edit(4, func(l string) string { return strings.Replace(l, `"messages":[`, `"messages":[`+deep+`,`, 1) })
			fe := readErr(b)
			Expect(fe).To(MatchError(cassette.ErrMalformed))
			Expect(fe.Line).To(Equal(4))
			Expect(fe.Error()).To(ContainSubstring("JSON nested deeper than 64 levels (ReadOptions.MaxDepth)"))
			_, err := cassette.Read(bytes.NewReader(b), "x", cassette.ReadOptions{MaxDepth: 200})
			Expect(err).NotTo(MatchError(ContainSubstring("nested deeper")), "a raised limit lets it through to the next check")
		})

		It("reads only regular files: not a device, a FIFO or a directory", func() {
			for _, path := range []string{os.DevNull, GinkgoT().TempDir()} {
				_, err := cassette.ReadFile(path)
				Expect(err).To(MatchError(ContainSubstring("is not a regular file")), "for %s", path)
			}
		})

		It("refuses a recording that its header says is incomplete", func() {
			b := edit(1, func(l string) string { return strings.Replace(l, `}`, `,"incomplete":"connection refused"}`, 1) })
			fe := readErr(b)
			Expect(fe).To(MatchError(cassette.ErrIncomplete))
			Expect(fe.Error()).To(ContainSubstring("cassette is an incomplete recording: the recording failed (connection refused) and this file keeps what it recorded before that; it cannot be replayed: record again"))
		})

		It("refuses a request line whose prior messages its run never had", func() {
			b := edit(6, func(l string) string { return regexp.MustCompile(`"prior":\d+`).ReplaceAllString(l, `"prior":99`) })
			fe := readErr(b)
			Expect(fe).To(MatchError(cassette.ErrMalformed))
			Expect(fe.Line).To(Equal(6))
			Expect(fe.Error()).To(MatchRegexp(`prior is 99, but the run's previous request had \d+ message\(s\)`))
		})
	})

	Describe("a file of another version or kind", func() {
		It("refuses a newer version, naming it, before looking at keys it may not know", func() {
			b := edit(1, func(string) string {
				return `{"kind":"header","format":"crux-sim-cassette","version":3,"compression":"zstd"}`
			})
			fe := readErr(b)
			Expect(fe).To(MatchError(cassette.ErrVersion))
			Expect(fe.Line).To(Equal(1))
			Expect(fe.Column).To(Equal(strings.Index(lines(b)[0], `"version"`) + 1))
			Expect(fe.Error()).To(Equal(`leaves.cassette:1:` + strconv.Itoa(fe.Column) + `: unsupported cassette version: version 3 is newer than this crux-sim reads (2); upgrade crux-sim or re-record`))
		})

		It("refuses a cassette of the old version 1, naming the version and what to do", func() {
			b := edit(1, func(string) string {
				return `{"kind":"header","format":"crux-sim-cassette","version":1,"scenario":"/proc/self/environ","seed":1}`
			})
			fe := readErr(b)
			Expect(fe).To(MatchError(cassette.ErrVersion))
			Expect(fe.Error()).To(Equal(`leaves.cassette:1:` + strconv.Itoa(strings.Index(lines(b)[0], `"version"`)+1) +
				`: unsupported cassette version: version 1 is older than this crux-sim reads (2): version 1 cassettes re-encoded structured output and named their scenario by path; re-record it with this crux-sim`))
		})

		It("refuses a file without a version", func() {
			fe := readErr(edit(1, func(string) string { return `{"kind":"header","format":"crux-sim-cassette"}` }))
			Expect(fe).To(MatchError(cassette.ErrVersion))
			Expect(fe.Error()).To(ContainSubstring("version 0 is not one this crux-sim reads (2)"))
		})

		It("refuses a file that is not a cassette at all", func() {
			for _, b := range []string{"", "hello\n", `{"kind":"request","seq":1}` + "\n", `{"kind":"header","format":"vcr","version":1}` + "\n"} {
				fe := readErr([]byte(b))
				Expect(fe).To(MatchError(cassette.ErrNotCassette), "for %q", b)
			}
		})
	})
})

// zeros is an endless stream of zero bytes, as /dev/zero is.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}
