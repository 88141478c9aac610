// Package kindtest holds the entry kinds that tests load and run: a
// service that crashes on request, a definition, one that updates in
// place.
package kindtest
