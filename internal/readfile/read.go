package readfile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/proctor-run/proctor/value"
)

// UnwrapPath returns the cause of a *fs.PathError (the path is shown
// apart), or err.
func UnwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

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
var ErrNotRegular = value.Sentinel("readfile.not_regular", value.KindInvalid, "not a regular file")

// ErrTooLarge: a file is larger than its configured limit.
var ErrTooLarge = value.Sentinel("readfile.too_large", value.KindLimit, "file too large")

// Error says why a file could not be read, in the words the loader's
// messages use.
type Error struct {
	Err   error  // ErrNotRegular, ErrTooLarge, ErrKernelFile, ErrReadTimeout, or the system's error
	What  string // for ErrNotRegular: what the path is instead; for ErrKernelFile, where it leads; for ErrReadTimeout, how long it waited
	limit int64  // for ErrTooLarge
}

func (e *Error) Error() string {
	switch e.Err {
	case ErrKernelFile:
		return fmt.Sprintf("not read: %s (%s), which can block a reader or never end", e.Err, e.What)
	case ErrReadTimeout:
		return fmt.Sprintf("%v: %s", e.Err, e.What)
	case ErrNotRegular:
		return fmt.Sprintf("not a regular file (%s)", e.What)
	case ErrTooLarge:
		return fmt.Sprintf("larger than the limit of %s", formatSize(e.limit))
	}
	return e.Err.Error()
}

// Unwrap returns the cause; for ErrReadTimeout also ETIMEDOUT, the errno
// a system call past its time gives, which callers retry on.
func (e *Error) Unwrap() []error {
	if e.Err == ErrReadTimeout {
		return []error{e.Err, syscall.ETIMEDOUT}
	}
	return []error{e.Err}
}

// FileType names what a non-regular mode is.
func FileType(m fs.FileMode) string {
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

// Stamp identifies one version of a file without reading it: the same
// file (device and inode), size and modification time. A stamp taken too
// soon after the file's last modification is not trusted (see racy), so a
// second write within one tick of the file system's clock is still seen.
type Stamp struct {
	info    fs.FileInfo
	trusted bool
}

// racyWindow is how close to its modification time a file may be read and
// still be told apart from a later write of the same size: file systems
// keep modification times at a granularity from a few milliseconds to two
// seconds (FAT).
const racyWindow = 2 * time.Second

// NewStamp is the stamp of fi, read at readAt.
func NewStamp(fi fs.FileInfo, readAt time.Time) Stamp {
	return Stamp{info: fi, trusted: fi.ModTime().Before(readAt.Add(-racyWindow))}
}

// Unchanged reports whether fi is the version s was taken of.
func (s Stamp) Unchanged(fi fs.FileInfo) bool {
	return s.trusted && s.info != nil && os.SameFile(s.info, fi) &&
		s.info.Size() == fi.Size() && s.info.ModTime().Equal(fi.ModTime()) && s.info.Mode() == fi.Mode()
}

// OpenFile opens files for Regular; tests make it fail the way a
// node out of file descriptors does.
var OpenFile = os.OpenFile

// ReadHook, when set, replaces DefaultReadOpened: tests make reads block
// as a read of a hung NFS or FUSE file does. It is atomic because the
// read runs on a goroutine of its own that may outlive its load.
var ReadHook atomic.Pointer[func(f *os.File, size, limit int64) ([]byte, error)]

// Block makes every read of a file block until release is called, as a
// read of a hung NFS or FUSE file does: tests of what a stuck read does
// to a load or a watcher use it. restore releases the reads, waits for
// the abandoned ones and ends the block, before another test swaps
// OpenFile or ReadHook.
func Block() (release, restore func()) {
	gate := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(gate) }) }
	hook := func(f *os.File, size, limit int64) ([]byte, error) {
		<-gate
		return DefaultReadOpened(f, size, limit)
	}
	ReadHook.Store(&hook)
	return release, func() {
		release()
		Running.Wait()
		ReadHook.Store(nil)
	}
}

// ReadOpened reads what Regular opened, at most limit+1 bytes.
func ReadOpened(f *os.File, size, limit int64) ([]byte, error) {
	if h := ReadHook.Load(); h != nil {
		return (*h)(f, size, limit)
	}
	return DefaultReadOpened(f, size, limit)
}

// DefaultReadOpened is how ReadOpened reads without a ReadHook.
func DefaultReadOpened(f *os.File, size, limit int64) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(int(size) + bytes.MinRead)
	_, err := buf.ReadFrom(io.LimitReader(f, limit+1))
	return buf.Bytes(), err
}

// DefaultReadTimeout bounds one read of a configuration file or a Lua
// source (Loader.ReadTimeout): 10 s.
const DefaultReadTimeout = 10 * time.Second

// ErrReadTimeout: a read of a configuration file or a source did not
// finish within its deadline (a hung network or FUSE file system, a
// kernel file whose read blocks). An *Error holding it also matches
// ETIMEDOUT, so the reload that met it is retried later (Transient).
var ErrReadTimeout = value.Sentinel("readfile.read_timeout", value.KindTimeout, "the read did not finish in time")

// ErrKernelFile: a path that resolves into /proc, /sys or /dev. Their
// files say they are regular and empty, and a read may block for good
// (/proc/kmsg) or never end; no configuration lives there.
var ErrKernelFile = value.Sentinel("readfile.kernel_file", value.KindInvalid, "a file of /proc, /sys or /dev")

// kernelDirs are the trees Regular refuses, wherever a symlink points.
var kernelDirs = []string{"/proc", "/sys", "/dev"}

// inKernelDir reports whether path, its symlinks resolved, lies in one of
// kernelDirs; it returns the resolved path.
func inKernelDir(path string) (string, bool) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return path, false // the open reports it
	}
	if abs, err := filepath.Abs(real); err == nil {
		real = abs
	}
	for _, d := range kernelDirs {
		if real == d || strings.HasPrefix(real, d+"/") {
			return real, true
		}
	}
	return real, false
}

// Stuck holds the paths whose read passed its deadline and has not
// returned yet: their goroutine is blocked in the kernel, where nothing
// can stop it. Another read of one of them fails at once rather than
// block a second goroutine.
var Stuck sync.Map

// Running counts the read goroutines, so that a test can wait for
// the ones its loads abandoned.
var Running sync.WaitGroup

// Regular reads the regular file at path, at most limit bytes, within
// timeout (0: DefaultReadTimeout) and until ctx is done. It never blocks
// on what is not a regular file: the file is opened non-blocking (opening
// a named pipe would wait for a writer) and checked on the open
// descriptor, so a file swapped for a pipe after a stat is refused too.
// Nothing under /proc, /sys or /dev is opened, wherever a symlink leads
// (and, on Linux, nothing on those file systems). The read itself is
// bounded, so a file that grows while it is read, or a device that never
// ends, costs at most limit+1 bytes; a read that does not finish in time
// fails with ErrReadTimeout and is left to finish on its own.
func Regular(ctx context.Context, path string, limit int64, timeout time.Duration) ([]byte, fs.FileInfo, error) {
	if real, ok := inKernelDir(path); ok {
		return nil, nil, &Error{Err: ErrKernelFile, What: real}
	}
	var (
		b   []byte
		fi  fs.FileInfo
		err error
	)
	// What the read sets is looked at only once it returned in time.
	if werr := Within(ctx, path, timeout, func() { b, fi, err = readOpen(path, limit) }); werr != nil {
		return nil, nil, werr
	}
	return b, fi, err
}

// Within runs f, a call on the file system about path (an open and read,
// a stat, the walk of a directory), on a goroutine of its own and waits
// for it, for timeout (0: DefaultReadTimeout), or until ctx is done. A
// call that does not return in time is left to finish on its own (a hung
// NFS mount blocks it in the kernel, where nothing can stop it): Within
// then fails with ErrReadTimeout, and so does every later call about path
// at once until it returned (Stuck). f must not touch what the caller
// uses until Within returned nil.
func Within(ctx context.Context, path string, timeout time.Duration, f func()) error {
	if _, ok := Stuck.Load(path); ok {
		return &Error{Err: ErrReadTimeout, What: "an earlier read of it has not returned yet"}
	}
	if timeout <= 0 {
		timeout = DefaultReadTimeout
	}
	done := make(chan struct{})
	Running.Add(1)
	go func() {
		defer Running.Done()
		f()
		Stuck.Delete(path)
		close(done)
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-done:
		return nil
	case <-t.C:
		Stuck.Store(path, true)
		// It may have finished as the timer fired, its Delete before
		// the Store.
		select {
		case <-done:
			Stuck.Delete(path)
			return nil
		default:
		}
		return &Error{Err: ErrReadTimeout, What: "no answer within " + timeout.String()}
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Stat is stat(path) under Within's deadline (os.Stat when stat is nil):
// a stat of a hung mount is left behind, not waited for. Its errors name
// path as os.Stat's do (an *fs.PathError), the deadline's and ctx's too.
func Stat(ctx context.Context, path string, timeout time.Duration, stat func(string) (fs.FileInfo, error)) (fs.FileInfo, error) {
	if stat == nil {
		stat = os.Stat
	}
	var (
		fi  fs.FileInfo
		err error
	)
	if werr := Within(ctx, path, timeout, func() { fi, err = stat(path) }); werr != nil {
		return nil, &fs.PathError{Op: "stat", Path: path, Err: werr}
	}
	return fi, err
}

// readOpen opens and reads path for Regular.
func readOpen(path string, limit int64) ([]byte, fs.FileInfo, error) {
	f, err := OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, &Error{Err: UnwrapPath(err)}
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, &Error{Err: UnwrapPath(err)}
	}
	if !fi.Mode().IsRegular() {
		return nil, fi, &Error{Err: ErrNotRegular, What: FileType(fi.Mode())}
	}
	if kernelFS(f) {
		return nil, fi, &Error{Err: ErrKernelFile, What: path}
	}
	if fi.Size() > limit {
		return nil, fi, &Error{Err: ErrTooLarge, limit: limit}
	}
	b, err := ReadOpened(f, fi.Size(), limit)
	if err != nil {
		return nil, fi, &Error{Err: UnwrapPath(err)}
	}
	if int64(len(b)) > limit {
		return nil, fi, &Error{Err: ErrTooLarge, limit: limit}
	}
	return b, fi, nil
}
