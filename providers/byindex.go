package providers

// ByIndex returns the element of *list whose index is i, appending
// add(i) when there is none: a stream's choices or candidates, by the
// index each chunk names. Streams have few, so a linear scan beats a map.
func ByIndex[T any](list *[]*T, i int, index func(*T) int, add func(int) *T) *T {
	for _, e := range *list {
		if index(e) == i {
			return e
		}
	}
	e := add(i)
	*list = append(*list, e)
	return e
}
