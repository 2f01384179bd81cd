package inputfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/crux-sim/crux-sim/internal/budget"
	"github.com/crux-sim/crux-sim/internal/fixture"
)

func TestMain(m *testing.M) { fixture.VerifyNoLeaks(m) }

var limit = Limit{Bytes: 64, What: "a test file", Raise: "--max-file-size"}

func TestADeviceIsRefusedBeforeAByteIsRead(t *testing.T) {
	var err error
	// /dev/zero never ends: reading it at all would not return.
	n := budget.Allocated(func() { _, err = Read("/dev/zero", Limit{Bytes: 1 << 30, What: "a test file", Raise: "-x"}) })
	if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "a character device") {
		t.Fatalf("got %v, want ErrNotRegular naming a character device", err)
	}
	if n > 16<<10 {
		t.Errorf("refusing /dev/zero allocated %d bytes; it must cost next to nothing", n)
	}
}

func TestAFIFOIsRefusedWithoutBlocking(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fifo.yaml")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("no FIFOs here: %v", err)
	}
	// Opening a FIFO with no writer blocks forever; Read must not open it.
	_, err := Read(path, limit)
	if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "FIFO") {
		t.Fatalf("got %v, want ErrNotRegular naming a FIFO", err)
	}
}

func TestADirectoryIsRefused(t *testing.T) {
	_, err := Read(t.TempDir(), limit)
	if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "a directory") {
		t.Fatalf("got %v", err)
	}
}

func TestASymlinkIsFollowedUnlessNoSymlinks(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "real.yaml")
	if err := os.WriteFile(target, []byte("name: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.yaml")
	if err := os.Symlink(target, link); err != nil {
		t.Skipf("no symlinks here: %v", err)
	}
	if b, err := Read(link, limit); err != nil || string(b) != "name: x\n" {
		t.Fatalf("a symlink given by the user: got %q, %v", b, err)
	}
	strict := limit
	strict.NoSymlinks = true
	if _, err := Read(link, strict); !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("NoSymlinks: got %v, want ErrNotRegular naming a symbolic link", err)
	}
}

func TestAFileOverTheLimitIsRefusedNamingTheLimitAndHowToRaiseIt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(path, []byte(strings.Repeat("x", 65)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Read(path, limit)
	var tl *TooLargeError
	if !errors.As(err, &tl) || !errors.Is(err, ErrTooLarge) {
		t.Fatalf("got %v, want a *TooLargeError", err)
	}
	if want := "larger than 64 bytes (64 B), the limit for a test file; raise it with --max-file-size"; err.Error() != want {
		t.Errorf("got %q, want %q", err, want)
	}
	if b, err := Read(path, Limit{Bytes: 65, What: "x", Raise: "y"}); err != nil || len(b) != 65 {
		t.Errorf("a file exactly at the limit: %d bytes, %v", len(b), err)
	}
}

// Files of /proc report a size of 0 and hold more: the reader, not the
// size, bounds what is read.
func TestAFileThatUnderstatesItsSizeIsStillReadOnlyUpToTheLimit(t *testing.T) {
	const path = "/proc/self/status" // reports 0 bytes, holds about a kilobyte
	fi, err := os.Stat(path)
	if err != nil || fi.Size() != 0 {
		t.Skipf("no procfs here: %v", err)
	}
	_, err = Read(path, limit)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("got %v, want ErrTooLarge", err)
	}
}

func TestAMissingFileSaysSoWithoutRepeatingThePath(t *testing.T) {
	_, err := Read("no-such-file.yaml", limit)
	if !errors.Is(err, os.ErrNotExist) || err.Error() != "no such file or directory" {
		t.Fatalf("got %v", err)
	}
}
