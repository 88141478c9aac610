package testutil

import "go.uber.org/goleak"

// IgnoreMemberlistProbe is for goleak.VerifyTestMain in packages that run
// memberlist: its probe of a node runs on after Shutdown until the probe's
// own timeouts end (a few hundred milliseconds, longer on a loaded
// machine). Every other goroutine of a memberlist that was not shut down
// is still reported.
var IgnoreMemberlistProbe = goleak.IgnoreTopFunction("github.com/hashicorp/memberlist.(*Memberlist).probeNode")
