package platform_test

import (
	"testing"

	"github.com/onsi/gomega"
)

// FuzzTaskDAGCrash crashes the process at fuzzed points across the task
// DAG: no task may be lost and no child may run before its parents are
// done. Run with go test -fuzz FuzzTaskDAGCrash ./platform/.
func FuzzTaskDAGCrash(f *testing.F) {
	for _, seed := range []uint64{1, 7, 42} {
		f.Add(seed, uint8(2))
	}
	f.Fuzz(func(t *testing.T, seed uint64, crashes uint8) {
		gomega.RegisterTestingT(t)
		crashCampaign(seed, int(crashes%6))
	})
}
