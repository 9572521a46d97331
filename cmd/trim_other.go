//go:build !linux

package cmd

// keepTrimmed does nothing where the executable's pages cannot be handed
// back (see trim_linux.go).
func keepTrimmed() {}
