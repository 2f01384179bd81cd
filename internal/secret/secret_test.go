package secret

import (
	"regexp"
	"slices"
	"testing"
)

func TestLiteralsKeepLongSecretsAndKeysWithoutTheirVendorPrefixLongestFirst(t *testing.T) {
	got := Literals("sk-proj-Q2x9WvT4mZ7yK1nB8cR3", "none", "", "sk-proj-Q2x9WvT4mZ7yK1nB8cR3")
	want := []string{"sk-proj-Q2x9WvT4mZ7yK1nB8cR3", "proj-Q2x9WvT4mZ7yK1nB8cR3", "Q2x9WvT4mZ7yK1nB8cR3"}
	if !slices.Equal(got, want) {
		t.Errorf("Literals = %q, want %q", got, want)
	}
}

func TestFromURLFindsThePasswordAndCredentialQueryValuesOnly(t *testing.T) {
	got := FromURL("https://bob:Hunt3r%21pw@host/v1?api-version=2024-10-21&api-key=a%2Fb&x-tenant=T3n&sig=S", regexp.MustCompile(`^x-tenant$`))
	want := []string{"Hunt3r!pw", "a%2Fb", "a/b", "T3n", "S"}
	if !slices.Equal(got, want) {
		t.Errorf("FromURL = %q, want %q", got, want)
	}
}

func TestFromHeadersFindsCredentialHeaderValuesWithAndWithoutTheirScheme(t *testing.T) {
	got := FromHeaders(map[string][]string{"Authorization": {"Bearer tok3nV4lue"}, "X-Title": {"my app"}})
	want := []string{"Bearer tok3nV4lue", "tok3nV4lue"}
	if !slices.Equal(got, want) {
		t.Errorf("FromHeaders = %q, want %q", got, want)
	}
}

func TestReplaceReplacesEveryLiteral(t *testing.T) {
	lits := Literals("sk-proj-Q2x9WvT4mZ7yK1nB8cR3")
	if got := Replace("a sk-proj-Q2x9WvT4mZ7yK1nB8cR3 b Q2x9WvT4mZ7yK1nB8cR3", lits); got != "a [REDACTED] b [REDACTED]" {
		t.Errorf("Replace = %q", got)
	}
}
