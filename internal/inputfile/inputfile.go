// Package inputfile reads the files crux-sim is handed (scenario files,
// schedule files) with a bounded cost: only a regular file, checked before a
// byte is read, so that /dev/zero or a FIFO fails at once instead of growing
// or blocking; and never more than a limit, through a LimitReader, so that a
// huge file costs the limit and no more.
//
// It is internal: the packages that read files (scenarios, harness) own
// their limits and the words of their errors; this package owns only how a
// file is read.
package inputfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// ErrNotRegular is wrapped by the error for a path that names anything but
// a regular file: a directory, a device, a FIFO, a socket, or (with
// Limit.NoSymlinks) a symbolic link.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is wrapped by every *TooLargeError.
var ErrTooLarge = errors.New("file too large")

// Limit says how much of what may be read.
type Limit struct {
	// Bytes is the most a file may hold; a larger one is refused.
	Bytes int64
	// What names the kind of file in errors, such as "a scenario file".
	What string
	// Raise says how to raise the limit, such as "--max-file-size".
	Raise string
	// NoSymlinks refuses a symbolic link instead of following it: for a
	// path that one file names (a schedule's target), which must not lead
	// the tool anywhere else.
	NoSymlinks bool
}

// TooLargeError is a file over its limit.
type TooLargeError struct {
	Limit Limit
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("larger than %d bytes (%s), the limit for %s; raise it with %s", e.Limit.Bytes, human(e.Limit.Bytes), e.Limit.What, e.Limit.Raise)
}

// Is lets errors.Is(err, ErrTooLarge) hold.
func (e *TooLargeError) Is(target error) bool { return target == ErrTooLarge }

// Read returns the contents of the regular file at path, at most l.Bytes of
// them. The errors it returns do not name the path (callers put it where
// their format wants it): the *fs.PathError of a missing or unreadable file
// is unwrapped to its cause.
func Read(path string, l Limit) ([]byte, error) {
	stat := os.Stat
	if l.NoSymlinks {
		stat = os.Lstat
	}
	fi, err := stat(path)
	if err != nil {
		return nil, unwrapPath(err)
	}
	if err := regular(fi); err != nil {
		return nil, err
	}
	if fi.Size() > l.Bytes {
		return nil, &TooLargeError{Limit: l}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, unwrapPath(err)
	}
	defer f.Close()
	// The path may have been replaced between the stat and the open: what
	// was opened is what counts.
	if fi, err = f.Stat(); err != nil {
		return nil, unwrapPath(err)
	}
	if err := regular(fi); err != nil {
		return nil, err
	}
	// Files such as those of /proc report a size of 0 and hold more: the
	// LimitReader, not the size, is the bound.
	return ReadFrom(f, l)
}

// ReadFrom reads what r holds (standard input, say), at most l.Bytes of
// it: more is refused with a *TooLargeError once l.Bytes+1 have been read,
// never by reading on to the end.
func ReadFrom(r io.Reader, l Limit) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, l.Bytes+1))
	if err != nil {
		return nil, unwrapPath(err)
	}
	if int64(len(b)) > l.Bytes {
		return nil, &TooLargeError{Limit: l}
	}
	return b, nil
}

func regular(fi fs.FileInfo) error {
	m := fi.Mode()
	if m.IsRegular() {
		return nil
	}
	kind := "not a plain file"
	switch {
	case m.IsDir():
		kind = "a directory"
	case m&fs.ModeSymlink != 0:
		kind = "a symbolic link"
	case m&fs.ModeNamedPipe != 0:
		kind = "a FIFO (named pipe)"
	case m&fs.ModeSocket != 0:
		kind = "a socket"
	case m&fs.ModeCharDevice != 0:
		kind = "a character device"
	case m&fs.ModeDevice != 0:
		kind = "a device"
	}
	return fmt.Errorf("%w: it is %s, and crux-sim reads only regular files", ErrNotRegular, kind)
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// human renders a byte count as KiB, MiB or GiB when it is a whole number
// of them.
func human(n int64) string {
	for _, u := range []struct {
		size int64
		name string
	}{{1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}} {
		if n >= u.size && n%u.size == 0 {
			return fmt.Sprintf("%d %s", n/u.size, u.name)
		}
	}
	return fmt.Sprintf("%d B", n)
}
