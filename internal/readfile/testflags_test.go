package readfile

// The test flags every package shares (-soak), so that
// `go test ./... -run Soak -soak 2m` is understood here too.
import _ "github.com/proctor-run/proctor/internal/testutil"
