package cassette_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"testing"

	"github.com/crux-sim/crux-sim/harness/cassette"
)

func TestRedactorReplacesSecretsAndTheirHeaderValues(t *testing.T) {
	red := cassette.NewRedactor([]string{"tenant-7f3a9c21", "short"}, regexp.MustCompile(`acct-\d+`))
	cases := []struct{ name, in, want string }{
		{"literal secret", "use tenant-7f3a9c21 here", "use [REDACTED] here"},
		{"literals shorter than MinSecretLen are left alone", "a short note", "a short note"},
		{"bearer token", "sent Bearer abcdefgh12345678", "sent Bearer [REDACTED]"},
		{"a bearer token of letters alone, as long as a token", "sent Bearer abcdefghijklmnopqrstuvwxYZ", "sent Bearer [REDACTED]"},
		{"a JWT bearer token", "Bearer eyJhbGciOiJIUzI1NiJ9.e30.x", "Bearer [REDACTED]"},
		{"the word bearer before an ordinary word is prose", "Bearer instruments, bearer securities, a standard-bearer position", "Bearer instruments, bearer securities, a standard-bearer position"},
		{"authorization header line keeps its name", "Authorization: Basic dXNlcjpwYXNz", "Authorization: [REDACTED]"},
		{"api-key header", "api-key: 0123456789abcdef", "api-key: [REDACTED]"},
		{"api_key pair stops at &", "api_key=zzz999&x=1", "api_key=[REDACTED]&x=1"},
		{"OpenAI-style key", "key sk-proj-AAAAbbbbCCCCdddd1234", "key [REDACTED]"},
		{"configured pattern", "account acct-123456 owes", "account [REDACTED] owes"},
		{"nothing secret", "Leaves change colour.", "Leaves change colour."},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := red.String(c.in); got != c.want {
				t.Errorf("String(%q) = %q, want %q", c.in, got, c.want)
			}
		})
	}
}

func TestRedactorRedactsEveryJSONStringKeepingKeyOrderAndEscapedSecrets(t *testing.T) {
	red := cassette.NewRedactor([]string{"sk-live-Zx81kQp0TmVb2rT7yU3wNc"})
	cases := []struct{ name, in, want string }{
		{"values and keys, order kept", `{"z":"sk-live-Zx81kQp0TmVb2rT7yU3wNc","a":{"sk-live-Zx81kQp0TmVb2rT7yU3wNc":1.50}}`,
			`{"z":"[REDACTED]","a":{"[REDACTED]":1.50}}`},
		{"a secret behind JSON escapes", `{"k":"\u0073k-live-Zx81kQp0TmVb2rT7yU3wNc"}`, `{"k":"[REDACTED]"}`},
		{"arrays, literals and <html> unescaped", `[true,false,null,"<b>&"]`, `[true,false,null,"<b>&"]`},
		{"formatting compacted", "{\n  \"a\": [1, 2]\n}", `{"a":[1,2]}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := red.JSON(json.RawMessage(c.in))
			if string(got) != c.want {
				t.Errorf("JSON(%s) = %s, want %s", c.in, got, c.want)
			}
		})
	}
}

func TestRedactorStripsCredentialsFromURLs(t *testing.T) {
	red := cassette.NewRedactor(nil)
	cases := []struct{ in, want string }{
		{"https://user:pass@example.test/v1", "https://example.test/v1"},
		{"https://x.openai.azure.com/openai?api-version=2024-10-21&sig=abc%2Bdef&foo=bar", "https://x.openai.azure.com/openai?api-version=2024-10-21&sig=[REDACTED]&foo=bar"},
		{"http://localhost:11434/v1", "http://localhost:11434/v1"},
	}
	for _, c := range cases {
		if got := red.URL(c.in); got != c.want {
			t.Errorf("URL(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestRedactorRedactsAKeyWithoutItsVendorPrefixToo(t *testing.T) {
	red := cassette.NewRedactor([]string{"sk-proj-Q2x9WvT4mZ7yK1nB8cR3"})
	for in, want := range map[string]string{
		"the key sk-proj-Q2x9WvT4mZ7yK1nB8cR3":      "the key [REDACTED]",
		"without sk-: proj-Q2x9WvT4mZ7yK1nB8cR3":    "without sk-: [REDACTED]",
		"just the body: Q2x9WvT4mZ7yK1nB8cR3, then": "just the body: [REDACTED], then",
	} {
		if got := red.String(in); got != want {
			t.Errorf("String(%q) = %q, want %q", in, got, want)
		}
	}
	if !red.Leaks([]byte("a line with Q2x9WvT4mZ7yK1nB8cR3 in it")) {
		t.Error("Leaks does not see the key's body")
	}
}

func TestRedactorKeepsTheBytesOfTextItRedacts(t *testing.T) {
	red := cassette.NewRedactor([]string{"sk-live-Zx81kQp0TmVb2rT7yU3wNc"})
	cases := []struct{ name, in, want string }{
		{"spaced JSON with nothing secret stays byte for byte", "{\"summary\": \"caf\\u00e9\",\n  \"n\": 1.50}", "{\"summary\": \"caf\\u00e9\",\n  \"n\": 1.50}"},
		{"a plain secret is replaced in place, layout kept", `{"note":  "sk-live-Zx81kQp0TmVb2rT7yU3wNc" }`, `{"note":  "[REDACTED]" }`},
		{"a secret behind escapes is found, at the cost of the layout", `{"note": "sk-live-Zx81k\u0051p0TmVb2rT7yU3wNc"}`, `{"note":"[REDACTED]"}`},
		{"text that is not JSON", `not JSON, sk-live-Zx81kQp0TmVb2rT7yU3wNc`, `not JSON, [REDACTED]`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := red.Text(c.in); got != c.want {
				t.Errorf("Text(%s) = %s, want %s", c.in, got, c.want)
			}
		})
	}
}

func TestURLSecretsAreTheCredentialsABaseURLCarries(t *testing.T) {
	got := cassette.URLSecrets("https://u:pa55word@h.test/v1?api-key=K1&key=K2&token=T%2B3&sig=S4&region=eu&x-pass=C5",
		regexp.MustCompile(`^x-pass$`))
	want := []string{"pa55word", "K1", "K2", "T%2B3", "T+3", "S4", "C5"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("URLSecrets = %q, want %q", got, want)
	}
}
