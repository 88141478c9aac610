// Package kindtest holds the entry kinds the tests of config and runtime
// load and run: a service that can crash on request, a definition, and
// one that updates in place.
package kindtest
