package suggest

import "strings"

// Closest returns the candidate closest to s when it is close enough to
// be a likely typo of it, "" otherwise: the "did you mean" of validation
// errors, the Lua host (a misspelt function or method) and the runner (a
// misspelt --main entry).
func Closest(s string, candidates []string) string {
	best, bestD := "", 1<<30
	for _, c := range candidates {
		if dd := levenshtein(s, c); dd < bestD {
			best, bestD = c, dd
		}
	}
	limit := 2
	if len(s) > 8 {
		limit = 3
	}
	if bestD <= limit && bestD < len(s) {
		return best
	}
	// A value cut short (scatter_gather for scatter_gather_first_completed)
	// is far from its name by edit distance; a sole candidate that starts
	// with it, at a word boundary, is what was meant.
	if len(s) >= 3 {
		var hit string
		for _, c := range candidates {
			if strings.HasPrefix(c, s) && len(c) > len(s) && (c[len(s)] == '_' || c[len(s)] == '.') {
				if hit != "" {
					return ""
				}
				hit = c
			}
		}
		return hit
	}
	return ""
}

func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
