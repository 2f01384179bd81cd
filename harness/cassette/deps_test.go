package cassette_test

import (
	"os/exec"
	"strings"
	"testing"
)

// Replay must never open a network connection. The strongest way to hold
// that is structural: the package cannot, because nothing it links can.
// (Which of the module's packages it may import is the import-direction
// table's business, in internal/archtest.)
func TestTheCassettePackageLinksNoNetworkCode(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/crux-sim/crux-sim/harness/cassette").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list listed only %d packages; the check would prove nothing:\n%s", len(deps), out)
	}
	for _, d := range deps {
		switch {
		case d == "net", d == "net/http", d == "crypto/tls", strings.HasPrefix(d, "net/http/"):
			t.Errorf("harness/cassette links %s; replay must not be able to reach the network", d)
		case strings.Contains(d, "go-openai"):
			t.Errorf("harness/cassette links %s; only core/openai may", d)
		}
	}
}
