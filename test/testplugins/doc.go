// Package testplugins holds plugin binaries that exist only for tests:
// well-behaved ones that expose edge cases, and broken ones that must be
// refused with a clear error.
package testplugins
