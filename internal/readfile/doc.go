// Package readfile reads the files a configuration names within bounds:
// regular files only, capped in size, within a deadline.
package readfile
