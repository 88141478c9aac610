//go:build !linux

package registry

import "os"

// kernelFS: only Linux is asked; elsewhere the paths are (inKernelDir).
func kernelFS(*os.File) bool { return false }
