// Package suggest finds the likely meaning of a misspelt name among the
// names that are valid: the "did you mean" of every error message.
package suggest
