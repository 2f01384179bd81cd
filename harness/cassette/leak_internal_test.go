package cassette

import (
	"errors"
	"testing"
)

// The encoder's last check refuses a line that still holds a literal
// secret. Redaction runs first, so only a value that bypassed it can reach
// the check; this test hands one over directly.
func TestTheEncoderRefusesALineThatStillHoldsASecret(t *testing.T) {
	enc := &encoder{red: NewRedactor([]string{"sk-live-Zx81kQp0TmVb2rT7yU3wNc"})}
	_, err := enc.line(map[string]string{"leak": "sk-live-Zx81kQp0TmVb2rT7yU3wNc"})
	if !errors.Is(err, ErrSecretLeak) {
		t.Fatalf("got %v, want ErrSecretLeak", err)
	}
	if _, err := enc.line(map[string]string{"fine": "[REDACTED]"}); err != nil {
		t.Fatalf("a clean line was refused: %v", err)
	}
}
