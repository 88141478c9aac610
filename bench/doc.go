// Package bench measures Proctor's process core side by side with
// protoactor-go in one run, on the scenarios of shared/NOTES.md:
//
//	go test -run '^$' -bench . -benchtime 1x ./...   (from bench/)
//
// It is a separate module so the main module does not depend on the peer.
package bench
