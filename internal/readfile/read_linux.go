//go:build linux

package readfile

import (
	"os"
	"syscall"
)

// The magic numbers of the kernel's own file systems (statfs(2)): their
// files claim to be regular, and reading one may block or never end.
var kernelMagics = map[int64]bool{
	0x9fa0:     true, // proc
	0x62656572: true, // sysfs
	0x64626720: true, // debugfs
	0x74726163: true, // tracefs
	0x73636673: true, // securityfs
	0x27e0eb:   true, // cgroup
	0x63677270: true, // cgroup2
	0x1cd1:     true, // devpts
	0xcafe4a11: true, // bpf
	0x6165676c: true, // pstore
	0x42494e4d: true, // binfmt_misc
	0x50494446: true, // pidfs
}

// kernelFS reports whether f lies on one of the kernel's file systems,
// wherever it is mounted.
func kernelFS(f *os.File) bool {
	var st syscall.Statfs_t
	if err := syscall.Fstatfs(int(f.Fd()), &st); err != nil {
		return false
	}
	return kernelMagics[int64(st.Type)]
}
