package checkpoint

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestIndexAgainstMap runs seeded random puts, deletes and lookups on the
// table and on a map side by side, with small tables so that probe runs wrap
// around the end and backward-shift deletion is exercised.
func TestIndexAgainstMap(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		var x index
		if seed%2 == 0 {
			x.reserve(3)
		}
		ref := map[idKey]Fingerprint{}
		var keys []idKey
		for op := range 3000 {
			switch r := rng.IntN(10); {
			case r < 5 || len(keys) == 0:
				// Few distinct a values force collisions of the first hash.
				k := idKey{a: rng.Uint64N(64) << 58, b: rng.Uint64() & bMask}
				if rng.IntN(3) == 0 && len(keys) > 0 {
					k = keys[rng.IntN(len(keys))]
				}
				fp := Fingerprint(rng.Uint64())
				if _, ok := ref[k]; !ok {
					keys = append(keys, k)
				}
				ref[k] = fp
				x.put(k, fp, uint32(op))
			case r < 7:
				i := rng.IntN(len(keys))
				k := keys[i]
				keys[i] = keys[len(keys)-1]
				keys = keys[:len(keys)-1]
				delete(ref, k)
				if j := x.find(k); j < 0 {
					t.Fatalf("seed %d op %d: %v missing before delete", seed, op, k)
				} else {
					x.del(j)
				}
			default:
				k := idKey{a: rng.Uint64N(64) << 58, b: rng.Uint64() & bMask}
				if j := x.find(k); (j >= 0) != (ref[k] != 0) {
					t.Fatalf("seed %d op %d: find(%v) = %d", seed, op, k, j)
				}
			}
			if x.n != len(ref) {
				t.Fatalf("seed %d op %d: n = %d, want %d", seed, op, x.n, len(ref))
			}
		}
		for k, fp := range ref {
			j := x.find(k)
			if j < 0 || x.fpAt(j) != fp {
				t.Fatalf("seed %d: %v → slot %d", seed, k, j)
			}
		}
	}
}

func TestIndexSeenFlags(t *testing.T) {
	var x index
	a, b := keyOfString("a"), keyOfString("b")
	x.put(a, 1, 1)
	i, _ := x.put(b, 2, 2)
	x.markSeen(i)
	if x.unseen() != 1 || !x.seen(x.find(b)) || x.seen(x.find(a)) {
		t.Fatal("seen flags wrong")
	}
	x.put(b, 3, 3) // an update keeps the flag
	x.resize(1000) // and so does growing
	if j := x.find(b); j < 0 || !x.seen(j) || x.fpAt(j) != 3 || x.lineAt(j) != 3 {
		t.Fatal("update or resize lost the entry's flag or values")
	}
	if keyOfString("a") != keyOf([]byte("a")) || keyOfString("a") == keyOfString("b") {
		t.Fatal("keyOf and keyOfString disagree")
	}
}

// BenchmarkIndex measures Classify's table work per id at 1M ids.
func BenchmarkIndex(b *testing.B) {
	const n = 1 << 20
	var x index
	x.reserve(n)
	keys := make([]idKey, n)
	for i := range keys {
		keys[i] = keyOfString(fmt.Sprintf("req-%08d", i))
		x.put(keys[i], Fingerprint(i+1), uint32(i))
	}
	i := 0
	for b.Loop() {
		if x.find(keys[i&(n-1)]) < 0 {
			b.Fatal("missing")
		}
		i++
	}
	b.ReportMetric(float64(x.bytes())/n, "bytes/id")
}
