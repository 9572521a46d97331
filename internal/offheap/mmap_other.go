//go:build !unix

package offheap

// onHeap is true: without mmap the memory is an ordinary heap slice.
const onHeap = true

func alloc(n int) []byte { return make([]byte, n) }

func release([]byte) {}
