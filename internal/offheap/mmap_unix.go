//go:build unix

package offheap

import "golang.org/x/sys/unix"

// onHeap is false: memory comes from anonymous mappings.
const onHeap = false

// alloc maps n zeroed bytes; the kernel gives pages only as they are
// touched. It panics if the system refuses, as make would.
func alloc(n int) []byte {
	mem, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		panic("offheap: mmap: " + err.Error())
	}
	return mem
}

func release(mem []byte) { unix.Munmap(mem) }
