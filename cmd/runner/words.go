package main

import "fmt"

// count renders n with its noun in the right number: "1 file", "2 files".
func count(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
