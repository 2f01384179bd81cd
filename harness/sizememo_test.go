package harness

import (
	"sync"
	"testing"

	"github.com/crux-sim/crux-sim/scenarios"
)

// A run makes room for the longest trace its scenario's runs recorded,
// and the memo of those sizes stays bounded however many scenarios run.
// Runs on many goroutines (a campaign's jobs) read and grow it at once.
func TestTraceSizeMemoRemembersTheLongestTraceAndStaysBounded(t *testing.T) {
	var m sizeMemo
	a, b := scenarios.New("a"), scenarios.New("b")
	if got := m.hint(a); got != traceHint {
		t.Fatalf("hint before any run = %d, want %d", got, traceHint)
	}
	var wg sync.WaitGroup
	for j := range 4 {
		wg.Go(func() {
			for n := range 100 {
				m.remember(a, n*4+j)
				m.remember(b, 10)
				_ = m.hint(a)
			}
		})
	}
	wg.Wait()
	if got := m.hint(a); got != 99*4+3 {
		t.Errorf("hint of a = %d, want the longest, %d", got, 99*4+3)
	}
	m.remember(a, 5)
	if got := m.hint(a); got != 99*4+3 {
		t.Errorf("a shorter trace changed the hint to %d", got)
	}
	for range maxSized + 10 {
		m.remember(scenarios.New("other"), 3)
	}
	if n := len(*m.sizes.Load()); n > maxSized {
		t.Errorf("the memo holds %d scenarios, past its bound of %d", n, maxSized)
	}
}
