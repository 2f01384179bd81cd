package cassette

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/url"
	"regexp"
	"strings"

	"github.com/crux-sim/crux-sim/internal/secret"
)

// Redacted replaces every secret a Redactor finds.
const Redacted = secret.Redacted

// MinSecretLen is the shortest literal secret a Redactor replaces. Shorter
// values (a local server's dummy key such as "none") would match ordinary
// text everywhere and are not secrets worth the damage. The OpenAI adapter
// scrubs its errors by the same rule.
const MinSecretLen = secret.MinLen

// DefaultSecretPatterns are redacted from every cassette whatever the
// options say: bearer tokens, the values of Authorization and api-key
// header lines and key=value pairs, and the shapes of common provider keys.
// Where a pattern has a group named "secret", only that group is replaced,
// so the text keeps saying what was there ("Authorization: [REDACTED]").
var DefaultSecretPatterns = []*regexp.Regexp{
	bearerPattern,
	regexp.MustCompile(`(?i)\b(?:authorization|proxy-authorization|api[-_]?key|x-api-key)\s*[:=]\s*(?P<secret>(?:(?:bearer|basic|token)\s+)?[^\s",&]+)`),
	regexp.MustCompile(`\bsk-[A-Za-z0-9_-]{16,}`),
}

// bearerPattern finds a bearer token. "Bearer" is also an English word
// ("bearer instruments", "a standard-bearer position"), and a model's prose
// must reach a cassette, and its replay, as the model wrote it: so a match
// is redacted only when it is tokenLike.
var bearerPattern = regexp.MustCompile(`(?i)\bbearer\s+(?P<secret>[a-z0-9._~+/=-]{8,})`)

// tokenLike tells a credential from a word: a token has a digit or one of
// the punctuation marks tokens are made of (_ ~ + / = and the dots of a
// JWT), or is longer than any word (24 bytes and more). A run of letters,
// perhaps hyphenated, is a word. A random token of 8 to 23 letters alone is
// rare; the literal secrets a recording is given are redacted whatever
// their shape.
func tokenLike(s string) bool {
	return len(s) >= 24 || strings.ContainsAny(s, "0123456789_~+/=.")
}

// URLSecrets returns the credentials a base URL carries: its user info's
// password and the value of every query parameter whose name looks like a
// credential (api-key, key, token, sig, ...) or matches one of params.
// Pass them as literal secrets (RecordOptions.Secrets), so that a value is
// redacted wherever it turns up, not only in the URL: in an error message
// that quotes the URL, or in a model's answer that repeats it.
func URLSecrets(base string, params ...*regexp.Regexp) []string {
	return secret.FromURL(base, params...)
}

// Redactor removes secrets from strings before they are written. The zero
// value and nil redact nothing; NewRedactor always includes
// DefaultSecretPatterns. A Redactor is immutable and safe for concurrent
// use.
type Redactor struct {
	secrets  []string
	patterns []*regexp.Regexp
}

// NewRedactor redacts the literal secrets (those at least MinSecretLen
// long; longest first, so a secret that contains another goes whole), the
// patterns, and DefaultSecretPatterns. A secret with a vendor prefix
// (sk-..., sk-proj-...) is redacted without its prefix too: a model that
// repeats a key often drops it.
func NewRedactor(secrets []string, patterns ...*regexp.Regexp) *Redactor {
	r := &Redactor{secrets: secret.Literals(secrets...)}
	r.patterns = append(append(r.patterns, patterns...), DefaultSecretPatterns...)
	return r
}

// Leaks reports whether b still holds one of the Redactor's literal
// secrets: the last check before a line is written.
func (r *Redactor) Leaks(b []byte) bool {
	if r == nil {
		return false
	}
	for _, s := range r.secrets {
		if bytes.Contains(b, []byte(s)) {
			return true
		}
	}
	return false
}

// Text redacts text that may be a JSON document (tool-call arguments, a
// structured output, a tool result) and keeps its bytes: spaces, key order
// and escapes stay as they were, so what a provider sent is what a replay
// returns. Only when a secret hides behind JSON escapes (\u0073k-...),
// where the text itself does not show it, is the document re-encoded with
// its strings redacted.
func (r *Redactor) Text(s string) string {
	out := r.String(s)
	if r == nil || !strings.Contains(out, `\`) || !json.Valid([]byte(out)) {
		return out
	}
	plain, redacted := reencode([]byte(out), nil), r.JSON(json.RawMessage(out))
	if plain != nil && !bytes.Equal(plain, redacted) {
		return string(redacted)
	}
	return out
}

// reencode renders a JSON document compactly through r (nil: unchanged
// strings); nil when it is not JSON.
func reencode(raw []byte, r *Redactor) []byte {
	var out bytes.Buffer
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := r.copyJSON(dec, &out); err != nil {
		return nil
	}
	return out.Bytes()
}

// String returns s with every secret replaced by Redacted.
func (r *Redactor) String(s string) string {
	if r == nil || s == "" {
		return s
	}
	s = secret.Replace(s, r.secrets)
	lower := ""
	for _, p := range r.patterns {
		if hints, ok := defaultHints[p]; ok {
			// Every string of every request passes here, and the default
			// patterns are case-insensitive regexps: skip each unless the
			// text holds one of the words it needs.
			if lower == "" {
				lower = strings.ToLower(s)
			}
			if !containsAny(lower, hints) {
				continue
			}
		}
		s = redactPattern(p, s)
	}
	return s
}

// defaultHints are words each default pattern cannot match without.
var defaultHints = map[*regexp.Regexp][]string{
	DefaultSecretPatterns[0]: {"bearer"},
	DefaultSecretPatterns[1]: {"authorization", "key"},
	DefaultSecretPatterns[2]: {"sk-"},
}

func containsAny(s string, words []string) bool {
	for _, w := range words {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// redactPattern replaces the pattern's "secret" group where it has one, and
// the whole match where it does not.
func redactPattern(p *regexp.Regexp, s string) string {
	g := p.SubexpIndex("secret")
	if g < 0 {
		return p.ReplaceAllLiteralString(s, Redacted)
	}
	var b strings.Builder
	last := 0
	for _, m := range p.FindAllStringSubmatchIndex(s, -1) {
		start, end := m[2*g], m[2*g+1]
		if start < 0 || s[start:end] == Redacted {
			continue
		}
		if p == bearerPattern {
			// A full stop after a token ends the sentence, not the token.
			end = start + len(strings.TrimRight(s[start:end], "."))
			if !tokenLike(s[start:end]) {
				continue
			}
		}
		b.WriteString(s[last:start])
		b.WriteString(Redacted)
		last = end
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// JSON redacts every string (keys included) of a JSON document and keeps
// its key order, so that a schema stays readable and diffs stay small. The
// strings are decoded first: a secret hidden behind JSON escapes such as
// \u0073k-... is found too.
func (r *Redactor) JSON(raw json.RawMessage) json.RawMessage {
	if r == nil || len(raw) == 0 {
		return raw
	}
	var out bytes.Buffer
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	err := r.copyJSON(dec, &out)
	if err == nil {
		if _, trailing := dec.Token(); trailing != io.EOF {
			err = errors.New("text after the JSON value")
		}
	}
	if err != nil {
		// Not JSON after all: redacting it as text is the safe choice;
		// the writer then stores it as text.
		return json.RawMessage(r.String(string(raw)))
	}
	return out.Bytes()
}

func (r *Redactor) copyJSON(dec *json.Decoder, out *bytes.Buffer) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch t := tok.(type) {
	case json.Delim:
		closing := byte('}')
		if t == '[' {
			closing = ']'
		}
		out.WriteByte(byte(t))
		for first := true; dec.More(); first = false {
			if !first {
				out.WriteByte(',')
			}
			if t == '{' {
				key, err := dec.Token()
				if err != nil {
					return err
				}
				writeJSONString(out, r.String(key.(string)))
				out.WriteByte(':')
			}
			if err := r.copyJSON(dec, out); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil {
			return err
		}
		out.WriteByte(closing)
	case string:
		writeJSONString(out, r.String(t))
	case json.Number:
		out.WriteString(t.String())
	case bool:
		if t {
			out.WriteString("true")
		} else {
			out.WriteString("false")
		}
	case nil:
		out.WriteString("null")
	}
	return nil
}

func writeJSONString(out *bytes.Buffer, s string) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	out.Write(bytes.TrimRight(b.Bytes(), "\n"))
}

// URL redacts a base URL: user info goes, and so do the values of query
// parameters that look like credentials; the rest is redacted as a string.
func (r *Redactor) URL(s string) string {
	if s == "" {
		return s
	}
	u, err := url.Parse(s)
	if err != nil {
		return r.String(s)
	}
	u.User = nil
	if u.RawQuery != "" {
		// Rebuilt by hand rather than with url.Values, which would sort
		// the parameters and escape the brackets of [REDACTED].
		parts := strings.Split(u.RawQuery, "&")
		for i, part := range parts {
			k, _, _ := strings.Cut(part, "=")
			if secret.CredentialName(k) {
				parts[i] = k + "=" + Redacted
			}
		}
		u.RawQuery = strings.Join(parts, "&")
	}
	return r.String(u.String())
}
