package supervisor

// oneForOne is OTP's one_for_one: only the child that failed restarts; its
// siblings keep running, untouched. The only strategy of a dynamic and of
// a partition supervisor, whose children are independent by design.
func oneForOne(dst, _ []*child, failed *child) []*child {
	return append(dst, failed)
}
