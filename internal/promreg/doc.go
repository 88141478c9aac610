// Package promreg registers Prometheus collectors the one way the node
// does: an equal collector registered already is shared, never refused.
package promreg
