package config

import (
	"io/fs"
	"os"
	"path/filepath"

	"github.com/proctor-run/proctor/internal/readfile"
)

// fileSystem is what a load asks of the file system besides reading files
// (readfile.Regular): the stat of a path and the walk of a directory. On a
// hung NFS or FUSE mount either blocks in the kernel as a read does, so a
// load makes them under the same deadline (Loader.ReadTimeout, through
// readfile.Within). Tests put in one that blocks.
type fileSystem interface {
	Stat(name string) (fs.FileInfo, error)
	WalkDir(root string, fn fs.WalkDirFunc) error
}

// osFS is the operating system's file system, a load's default.
type osFS struct{}

func (osFS) Stat(name string) (fs.FileInfo, error)        { return os.Stat(name) }
func (osFS) WalkDir(root string, fn fs.WalkDirFunc) error { return filepath.WalkDir(root, fn) }

// stat is fsys.Stat of path within the load's deadline: a stat that does
// not return in time fails with readfile.ErrReadTimeout (and the load
// goes on without waiting for it); when the load is abandoned, with its
// context's error.
func (ld *load) stat(path string) (fs.FileInfo, error) {
	return readfile.Stat(ld.ctx, path, ld.readTimeout, ld.fsys.Stat)
}
