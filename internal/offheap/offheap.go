// Package offheap allocates large pointer-free tables outside the Go heap.
//
// The garbage collector lets the heap grow to twice what is live before it
// collects (GOGC=100), so a table that is most of the live heap (the
// checkpoint's index of a 10M-line output: 300 MB) would double the
// process's memory for nothing: the table is never garbage until it is
// dropped whole. Outside the heap it costs its own size, and the heap goal
// follows only what the run has in flight.
package offheap

import (
	"fmt"
	"reflect"
	"runtime"
	"unsafe"
)

// Slice is a zeroed slice of n Ts outside the Go heap. S is valid until
// Free is called; if it never is, the memory is returned once the Slice
// becomes unreachable. Never keep S (or a part of it) beyond the Slice that
// owns it. A Slice is not safe for concurrent Free.
type Slice[T any] struct {
	S       []T
	mem     []byte
	cleanup runtime.Cleanup
}

// Make returns a Slice of n zeroed Ts. T must hold no pointers (the
// collector does not see the memory); Make panics if it does.
func Make[T any](n int) *Slice[T] {
	t := reflect.TypeFor[T]()
	if hasPointers(t) {
		panic(fmt.Sprintf("offheap: %v holds pointers", t))
	}
	if n <= 0 || t.Size() == 0 {
		return &Slice[T]{S: make([]T, n)}
	}
	mem := alloc(n * int(t.Size()))
	s := &Slice[T]{S: unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(mem))), n), mem: mem}
	if !onHeap {
		s.cleanup = runtime.AddCleanup(s, release, mem)
	}
	return s
}

// Free returns the memory at once; S is empty afterwards. Free of a nil
// Slice, or a second Free, does nothing.
func (s *Slice[T]) Free() {
	if s == nil || s.mem == nil {
		return
	}
	if !onHeap {
		s.cleanup.Stop()
		release(s.mem)
	}
	s.S, s.mem = nil, nil
}

// hasPointers reports whether values of t hold pointers the collector
// would have to see.
func hasPointers(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Array:
		return t.Len() > 0 && hasPointers(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if hasPointers(t.Field(i).Type) {
				return true
			}
		}
		return false
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return false
	}
	return true
}
