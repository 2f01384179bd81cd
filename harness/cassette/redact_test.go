package cassette_test

import (
	"encoding/json"
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
