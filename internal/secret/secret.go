// Package secret holds the one rule for which values a credential makes
// secret: the provider adapter (core/openai) scrubs them from the errors it
// returns, and the cassette redactor (harness/cassette) from every line it
// writes. Both must agree: a value one of them let through would reach a
// cassette, a transcript or a log by the other's path.
package secret

import (
	"net/url"
	"regexp"
	"sort"
	"strings"
)

// MinLen is the shortest literal secret that is replaced. Shorter values
// (a local server's dummy key such as "none") would match ordinary text
// everywhere and are not secrets worth the damage.
const MinLen = 8

// Redacted replaces every secret.
const Redacted = "[REDACTED]"

// minBodyLen is the shortest key body (what follows a vendor prefix) that
// is replaced on its own: long enough to be the random part of a key.
const minBodyLen = 12

// credentialName matches the names of query parameters and headers that
// carry credentials: api-key, key, token, Azure SAS sig and signature,
// passwords, Authorization.
var credentialName = regexp.MustCompile(`(?i)(key|token|secret|sig|signature|password|auth)`)

// CredentialName reports whether a query parameter or header name (escaped
// or not) says its value is a credential, by the built-in rule or one of
// extra.
func CredentialName(name string, extra ...*regexp.Regexp) bool {
	if dec, err := url.QueryUnescape(name); err == nil {
		name = dec
	}
	if credentialName.MatchString(name) {
		return true
	}
	for _, p := range extra {
		if p.MatchString(name) {
			return true
		}
	}
	return false
}

// FromURL returns the credentials a URL carries: its user info's password
// and the value (as written and unescaped) of every query parameter whose
// name is a CredentialName.
func FromURL(raw string, extra ...*regexp.Regexp) []string {
	u, err := url.Parse(raw)
	if err != nil {
		return nil
	}
	var out []string
	if pw, ok := u.User.Password(); ok && pw != "" {
		out = append(out, pw)
	}
	for _, part := range strings.Split(u.RawQuery, "&") {
		k, v, ok := strings.Cut(part, "=")
		if !ok || v == "" || !CredentialName(k, extra...) {
			continue
		}
		out = append(out, v)
		if dec, err := url.QueryUnescape(v); err == nil && dec != v {
			out = append(out, dec)
		}
	}
	return out
}

// FromHeaders returns the values of the headers whose names are a
// CredentialName (Authorization, api-key, X-Api-Key, X-Auth-Token, ...),
// without an auth scheme such as "Bearer " as well. It takes an
// http.Header; the type is spelt out so that this package, which the
// offline cassette package links, links no network code.
func FromHeaders(h map[string][]string) []string {
	var out []string
	for name, vs := range h {
		if !CredentialName(name) {
			continue
		}
		for _, v := range vs {
			out = append(out, v)
			if _, cred, ok := strings.Cut(strings.TrimSpace(v), " "); ok {
				out = append(out, strings.TrimSpace(cred))
			}
		}
	}
	return out
}

// Literals returns the values to replace for the given secrets: each one at
// least MinLen long, and, for a key with a vendor prefix (sk-..., sk-proj-...),
// the key without each of its prefixes too (a model or an endpoint that
// repeats a key often drops it). Duplicates go; the longest come first, so
// that a secret that contains another is replaced whole.
func Literals(secrets ...string) []string {
	seen := map[string]bool{}
	var out []string
	add := func(s string) {
		if len(s) >= MinLen && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, s := range secrets {
		if len(s) < MinLen {
			continue
		}
		add(s)
		for _, u := range unprefixed(s) {
			add(u)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// unprefixed returns a key without each of its leading prefixes: sk-proj-X
// gives proj-X and X. Only separators in the first 16 bytes count, and
// only a body of at least minBodyLen bytes is kept.
func unprefixed(s string) []string {
	var out []string
	for i := 0; i < len(s) && i < 16; i++ {
		if (s[i] == '-' || s[i] == '_') && len(s)-i-1 >= minBodyLen {
			out = append(out, s[i+1:])
		}
	}
	return out
}

// Replace returns s with every literal (as Literals returns them) replaced
// by Redacted.
func Replace(s string, literals []string) string {
	for _, l := range literals {
		if strings.Contains(s, l) {
			s = strings.ReplaceAll(s, l, Redacted)
		}
	}
	return s
}
