package registry

// Suggest returns the candidate closest to s when it is close enough to be
// a likely typo of it, "" otherwise: the "did you mean" of validation
// errors, shared by the Lua host (a misspelt function or method) and the
// runner (a misspelt --main entry).
func Suggest(s string, candidates []string) string { return suggest(s, candidates) }
