package supervisor

import "slices"

// restForOne is OTP's rest_for_one: for children that depend on those
// started before them, the failed child and every child started after it
// restart; those started before keep running.
func restForOne(dst, children []*child, failed *child) []*child {
	return append(dst, children[slices.Index(children, failed):]...)
}
