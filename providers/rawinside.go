package providers

import "unsafe"

// RawInside returns where the inside of v, a raw JSON value of two bytes
// or more that aliases data (as a walk of data hands out), starts and ends
// in data: one byte in from each end. -1, -1 when v is shorter or not in
// data. The stream decoders' templates cut a walked chunk around it.
func RawInside(data []byte, v string) (start, end int) {
	if len(v) < 2 {
		return -1, -1
	}
	off := int(uintptr(unsafe.Pointer(unsafe.StringData(v))) - uintptr(unsafe.Pointer(unsafe.SliceData(data))))
	if off < 0 || off+len(v) > len(data) {
		return -1, -1
	}
	return off + 1, off + len(v) - 1
}
