//go:build !linux

package readfile

import "os"

// kernelFS: only Linux is asked; elsewhere the paths are (inKernelDir).
func kernelFS(*os.File) bool { return false }
