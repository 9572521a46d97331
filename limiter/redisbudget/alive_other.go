//go:build !unix

package redisbudget

// processAlive cannot ask the operating system here: every process counts
// as alive, so nothing is reclaimed and dead slots wait for their lease.
func processAlive(int) bool { return true }
