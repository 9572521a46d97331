//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package h1

import "syscall"

// initPeek prepares peek on the socket, so a liveness check allocates
// nothing: the raw conn and the callback are made once per connection.
func (c *conn) initPeek() {
	sc, ok := c.raw.(syscall.Conn)
	if !ok {
		return
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return
	}
	c.rc = rc
	var buf [1]byte
	c.peekFn = func(fd uintptr) bool {
		n, _, err := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		// Nothing to read yet is the only healthy answer: n == 0 is the
		// server's FIN, n > 0 bytes nobody asked for, other errors a reset.
		c.peekOK = n <= 0 && (err == syscall.EAGAIN || err == syscall.EWOULDBLOCK)
		return true
	}
}

// peek reports whether the socket is open with nothing to read, with one
// non-blocking MSG_PEEK; a connection it cannot check counts as open.
func (c *conn) peek() bool {
	if c.rc == nil {
		return true
	}
	c.peekOK = false
	if err := c.rc.Read(c.peekFn); err != nil {
		return false
	}
	return c.peekOK
}
