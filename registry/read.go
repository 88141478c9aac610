package registry

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
	"time"
)

// Default caps on what one file read may hold. A configuration file is
// read whole and parsed into a tree about fifty times its size; a Lua
// source is compiled whole. Neither has any business being larger.
const (
	// DefaultMaxConfigSize caps each YAML file: 8 MiB, about 80,000 entries.
	DefaultMaxConfigSize = 8 << 20
	// DefaultMaxSourceSize caps each Lua source: 4 MiB.
	DefaultMaxSourceSize = 4 << 20
)

// ErrNotRegular: a path names something other than a regular file (a
// named pipe, a device, a socket), which can block a reader for good or
// never end.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge: a file is larger than its configured limit.
var ErrTooLarge = errors.New("file too large")

// readError says why a file could not be read, in the words the loader's
// messages use.
type readError struct {
	err   error  // ErrNotRegular, ErrTooLarge, or the system's error
	what  string // for ErrNotRegular: what the path is instead
	limit int64  // for ErrTooLarge
}

func (e *readError) Error() string {
	switch e.err {
	case ErrNotRegular:
		return fmt.Sprintf("not a regular file (%s)", e.what)
	case ErrTooLarge:
		return fmt.Sprintf("larger than the limit of %s", formatSize(e.limit))
	}
	return e.err.Error()
}

func (e *readError) Unwrap() error { return e.err }

// fileType names what a non-regular mode is.
func fileType(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m.IsDir():
		return "a directory"
	}
	return "not a plain file"
}

// formatSize renders n bytes the way the limits are usually written.
func formatSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// stamp identifies one version of a file without reading it: the same
// file (device and inode), size and modification time. A stamp taken too
// soon after the file's last modification is not trusted (see racy), so a
// second write within one tick of the file system's clock is still seen.
type stamp struct {
	info    fs.FileInfo
	trusted bool
}

// racyWindow is how close to its modification time a file may be read and
// still be told apart from a later write of the same size: file systems
// keep modification times at a granularity from a few milliseconds to two
// seconds (FAT).
const racyWindow = 2 * time.Second

func newStamp(fi fs.FileInfo, readAt time.Time) stamp {
	return stamp{info: fi, trusted: fi.ModTime().Before(readAt.Add(-racyWindow))}
}

// unchanged reports whether fi is the version s was taken of.
func (s stamp) unchanged(fi fs.FileInfo) bool {
	return s.trusted && s.info != nil && os.SameFile(s.info, fi) &&
		s.info.Size() == fi.Size() && s.info.ModTime().Equal(fi.ModTime()) && s.info.Mode() == fi.Mode()
}

// openFile opens files for readRegular; tests make it fail the way a
// node out of file descriptors does.
var openFile = os.OpenFile

// readRegular reads the regular file at path, at most limit bytes. It
// never blocks on what is not a regular file: the file is opened
// non-blocking (opening a named pipe would wait for a writer) and checked
// on the open descriptor, so a file swapped for a pipe after a stat is
// refused too. The read itself is bounded, so a file that grows while it
// is read, or a device that never ends, costs at most limit+1 bytes.
func readRegular(path string, limit int64) ([]byte, fs.FileInfo, error) {
	f, err := openFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, &readError{err: unwrapPath(err)}
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, &readError{err: unwrapPath(err)}
	}
	if !fi.Mode().IsRegular() {
		return nil, fi, &readError{err: ErrNotRegular, what: fileType(fi.Mode())}
	}
	if fi.Size() > limit {
		return nil, fi, &readError{err: ErrTooLarge, limit: limit}
	}
	var buf bytes.Buffer
	buf.Grow(int(fi.Size()) + bytes.MinRead)
	if _, err := buf.ReadFrom(io.LimitReader(f, limit+1)); err != nil {
		return nil, fi, &readError{err: unwrapPath(err)}
	}
	if int64(buf.Len()) > limit {
		return nil, fi, &readError{err: ErrTooLarge, limit: limit}
	}
	return buf.Bytes(), fi, nil
}
