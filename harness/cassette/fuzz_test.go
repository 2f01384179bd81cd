package cassette_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/crux-sim/crux-sim/harness/cassette"
)

// FuzzReadFailsAsAFormatErrorOrWritesBackWhatItRead is the reader's rule
// for any bytes at all: reading either fails with a *FormatError that
// names a line and wraps one of the reading errors, or succeeds with a
// cassette that Write turns into a file reading back to the same bytes
// (what was read is all that is kept, and nothing is lost between reading
// and writing). The seeds are the hostile corpus; run it past the suite
// with go test -run '^$' -fuzz FuzzRead ./harness/cassette.
func FuzzReadFailsAsAFormatErrorOrWritesBackWhatItRead(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "hostile", "*.cassette"))
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	sentinels := []error{cassette.ErrNotCassette, cassette.ErrVersion, cassette.ErrTruncated,
		cassette.ErrIncomplete, cassette.ErrTooLarge, cassette.ErrMalformed}
	f.Fuzz(func(t *testing.T, b []byte) {
		opts := cassette.ReadOptions{MaxBytes: 1 << 20}
		c, err := cassette.Read(bytes.NewReader(b), "f.cassette", opts)
		if err != nil {
			var fe *cassette.FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("not a *FormatError: %T %v", err, err)
			}
			// Only an empty file and one past the size limit have no line
			// to blame.
			lineless := len(b) == 0 || errors.Is(err, cassette.ErrTooLarge)
			if fe.File != "f.cassette" || (fe.Line < 1 && !lineless) {
				t.Fatalf("error names no line of the file: %+v", fe)
			}
			known := false
			for _, s := range sentinels {
				known = known || errors.Is(err, s)
			}
			if !known {
				t.Fatalf("error wraps none of the reading errors: %v", err)
			}
			return
		}
		var once bytes.Buffer
		if err := c.Write(&once); err != nil {
			t.Fatalf("a cassette read cannot be written: %v", err)
		}
		again, err := cassette.Read(bytes.NewReader(once.Bytes()), "f.cassette", opts)
		if err != nil {
			t.Fatalf("what Write wrote does not read back: %v\n%s", err, once.Bytes())
		}
		var twice bytes.Buffer
		if err := again.Write(&twice); err != nil {
			t.Fatalf("the cassette read back cannot be written: %v", err)
		}
		if !bytes.Equal(once.Bytes(), twice.Bytes()) {
			t.Fatalf("writing is not stable:\n%s\n---\n%s", once.Bytes(), twice.Bytes())
		}
	})
}
