package pricing

import "testing"

// BenchmarkSnapshotFirstLookup is what a run pays for its first price: the
// snapshot indexed and one entry parsed (parsing every entry up front cost
// about 10 ms a process).
func BenchmarkSnapshotFirstLookup(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		t, err := indexSnapshot(snapshotJSON)
		if err != nil {
			b.Fatal(err)
		}
		if _, ok := t.Lookup("openai", "gpt-4o-mini"); !ok {
			b.Fatal("gpt-4o-mini unknown")
		}
	}
}

// BenchmarkSnapshotParseAll parses every entry, as the snapshot was read
// before it was indexed.
func BenchmarkSnapshotParseAll(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := parse([]byte(snapshotJSON), "snapshot.json", false); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLookupAgain is the lookup of every answer's price.
func BenchmarkLookupAgain(b *testing.B) {
	t := Snapshot()
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := t.Lookup("openai", "gpt-4o-mini"); !ok {
			b.Fatal("gpt-4o-mini unknown")
		}
	}
}
