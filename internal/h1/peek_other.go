//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package h1

// initPeek: no non-blocking peek here; an idle connection the server
// closed is found by the request that takes it.
func (c *conn) initPeek() {}

func (c *conn) peek() bool { return true }
