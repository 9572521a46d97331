package cache

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/llmrun/llmrun/limiter/redisbudget/redistest"
)

// entryFor is the entry test key i maps to, its body padded to size.
func entryFor(i, size int) (Key, *Entry) {
	body := fmt.Sprintf(`{"answer":%d,"pad":"%0*d"}`, i, size, 0)
	k := KeyOf("/v1/chat/completions", "m1", []byte(strconv.Itoa(i)))
	return k, &Entry{Endpoint: "/v1/chat/completions", Model: "m1", Status: 200, Body: json.RawMessage(body),
		InputTokens: int64(i), OutputTokens: 7, Created: time.Unix(1700000000, 0).UTC()}
}

// checkEntry fails unless e is exactly what entryFor(i) stored.
func checkEntry(t testing.TB, i int, e *Entry) {
	t.Helper()
	_, want := entryFor(i, len(e.Body)-len(fmt.Sprintf(`{"answer":%d,"pad":""}`, i)))
	if string(e.Body) != string(want.Body) || e.InputTokens != int64(i) || e.Model != "m1" {
		t.Fatalf("entry %d: got %+v", i, e)
	}
}

func TestDirRoundTripAndMiss(t *testing.T) {
	d, err := OpenDir(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	k, e := entryFor(1, 10)
	if _, ok, err := d.Get(ctx, k); ok || err != nil {
		t.Fatalf("empty cache: hit=%v err=%v", ok, err)
	}
	if err := d.Put(ctx, k, e); err != nil {
		t.Fatal(err)
	}
	got, ok, err := d.Get(ctx, k)
	if !ok || err != nil {
		t.Fatalf("hit=%v err=%v", ok, err)
	}
	checkEntry(t, 1, got)
	st, _ := d.Stats(ctx)
	if st.Entries != 1 || st.Bytes == 0 {
		t.Fatalf("stats %+v", st)
	}
	if n, err := d.Clear(ctx); n != 1 || err != nil {
		t.Fatalf("clear: %d %v", n, err)
	}
	if _, ok, _ := d.Get(ctx, k); ok {
		t.Fatal("hit after clear")
	}
}

// TestNeverForAnotherModelOrEndpoint: the key depends on endpoint and
// model, and an entry found under a key is checked against both.
func TestNeverForAnotherModelOrEndpoint(t *testing.T) {
	body := []byte(`{"model":"m1","messages":[]}`)
	base := KeyOf("/v1/chat/completions", "m1", body)
	for _, k := range []Key{KeyOf("/v1/responses", "m1", body), KeyOf("/v1/chat/completions", "m2", body),
		KeyOf("/v1/chat/completions", "m1", append(body, ' ')), KeyOf("/v1/chat/completions\x00m1", "", body)} {
		if k == base {
			t.Fatalf("key %s collides with the base key", k)
		}
	}
	d, _ := OpenDir(t.TempDir(), Options{})
	ctx := context.Background()
	_, e := entryFor(1, 0)
	// An entry for m1 that sits under the key a request for m2 looks up
	// (a copied file, or a bug upstream) is still not served for m2.
	m2 := KeyOf("/v1/chat/completions", "m2", body)
	d.Put(ctx, m2, e)
	if _, ok, _ := Lookup(ctx, d, m2, "/v1/chat/completions", "m2"); ok {
		t.Fatal("an answer for m1 was served for m2")
	}
	if _, ok, _ := Lookup(ctx, d, m2, "/v1/embeddings", "m1"); ok {
		t.Fatal("a chat answer was served for embeddings")
	}
	if _, ok, _ := Lookup(ctx, d, m2, "/v1/chat/completions", "m1"); !ok {
		t.Fatal("the matching lookup missed")
	}
}

// TestDamagedEntryIsAMiss: a torn file, a flipped bit or a foreign file
// is never served, and is removed.
func TestDamagedEntryIsAMiss(t *testing.T) {
	d, _ := OpenDir(t.TempDir(), Options{})
	ctx := context.Background()
	k, e := entryFor(3, 100)
	d.Put(ctx, k, e)
	good, _ := os.ReadFile(d.path(k))
	flipped := append([]byte(nil), good...)
	flipped[len(flipped)-5] ^= 0x20
	for name, b := range map[string][]byte{"torn": good[:len(good)/2], "flipped": flipped, "empty": nil, "header only": good[:headerLen], "foreign": []byte(`{"body":1}`)} {
		os.WriteFile(d.path(k), b, 0o644)
		if _, ok, err := d.Get(ctx, k); ok || err != nil {
			t.Fatalf("%s: served (hit=%v err=%v)", name, ok, err)
		}
		if _, err := os.Stat(d.path(k)); !os.IsNotExist(err) {
			t.Fatalf("%s: damaged file left in place", name)
		}
	}
	if st, _ := d.Stats(ctx); st.Corrupt != 5 {
		t.Fatalf("corrupt count %d, want 5", st.Corrupt)
	}
}

// TestEvictsLeastRecentlyUsed: Prune keeps the entries used last.
func TestEvictsLeastRecentlyUsed(t *testing.T) {
	now := time.Now().Add(time.Hour)
	clock := func() time.Time { return now }
	d, _ := OpenDir(t.TempDir(), Options{Now: clock})
	ctx := context.Background()
	var size int64
	for i := range 10 {
		k, e := entryFor(i, 1000)
		d.Put(ctx, k, e)
		now = now.Add(2 * time.Minute)
		if i == 0 {
			st, _ := d.Stats(ctx)
			size = st.Bytes
		}
	}
	// Use 0..2 again: now the most recent.
	for i := range 3 {
		k, _ := entryFor(i, 1000)
		if _, ok, _ := d.Get(ctx, k); !ok {
			t.Fatalf("entry %d missing", i)
		}
		now = now.Add(2 * time.Minute)
	}
	pr, err := d.Prune(ctx, 5*size)
	if err != nil || pr.Entries != 5 || pr.Left > 5*size {
		t.Fatalf("prune: %+v %v", pr, err)
	}
	for i := range 10 {
		k, _ := entryFor(i, 1000)
		_, ok, _ := d.Get(ctx, k)
		if want := i < 3 || i >= 8; ok != want {
			t.Errorf("entry %d kept=%v, want %v", i, ok, want)
		}
	}
}

// helperEnv makes the test binary a cache writer (see TestHelperWriter).
const helperEnv = "LLMRUN_CACHE_WRITER"

// TestHelperWriter is not a test: run as a child process it puts entries
// from..to (repeated rounds times) into the cache at $LLMRUN_CACHE_WRITER,
// printing each key's number once put.
func TestHelperWriter(t *testing.T) {
	root := os.Getenv(helperEnv)
	if root == "" {
		t.Skip("helper process only")
	}
	from, _ := strconv.Atoi(os.Getenv("FROM"))
	to, _ := strconv.Atoi(os.Getenv("TO"))
	rounds, _ := strconv.Atoi(os.Getenv("ROUNDS"))
	d, err := OpenDir(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(os.Stdout)
	for r := range rounds {
		for i := from; i < to; i++ {
			k, e := entryFor(i, 20000+r)
			if err := d.Put(context.Background(), k, e); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintln(w, i)
			w.Flush()
		}
	}
}

// writer starts a child process writing entries from..to into root.
func writer(t *testing.T, root string, from, to, rounds int) (*exec.Cmd, *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperWriter$")
	cmd.Env = append(os.Environ(), helperEnv+"="+root, "FROM="+strconv.Itoa(from), "TO="+strconv.Itoa(to), "ROUNDS="+strconv.Itoa(rounds))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, bufio.NewScanner(out)
}

// TestTwoProcessesWriteOneCache: two processes put overlapping keys at
// once; every entry afterwards is whole and right.
func TestTwoProcessesWriteOneCache(t *testing.T) {
	root := t.TempDir()
	a, sa := writer(t, root, 0, 300, 2)
	b, sb := writer(t, root, 150, 450, 2)
	for _, s := range []*bufio.Scanner{sa, sb} {
		for s.Scan() {
		}
	}
	if err := a.Wait(); err != nil {
		t.Fatal(err)
	}
	if err := b.Wait(); err != nil {
		t.Fatal(err)
	}
	d, _ := OpenDir(root, Options{})
	for i := range 450 {
		k, _ := entryFor(i, 0)
		e, ok, err := d.Get(context.Background(), k)
		if !ok || err != nil {
			t.Fatalf("entry %d: hit=%v err=%v", i, ok, err)
		}
		checkEntry(t, i, e)
	}
	if st, _ := d.Stats(context.Background()); st.Entries != 450 || st.Corrupt != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// TestKillDuringWritesServesNothingCorrupt kills a writer with SIGKILL
// mid-stream; every entry then read is whole, and a second writer and
// Prune clean up after it.
func TestKillDuringWritesServesNothingCorrupt(t *testing.T) {
	root := t.TempDir()
	cmd, s := writer(t, root, 0, 100000, 1)
	for n := 0; n < 200 && s.Scan(); n++ {
	}
	cmd.Process.Kill()
	cmd.Wait()
	d, _ := OpenDir(root, Options{})
	hits := 0
	for i := range 2000 {
		k, _ := entryFor(i, 0)
		e, ok, err := d.Get(context.Background(), k)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			checkEntry(t, i, e)
			hits++
		}
	}
	if hits < 200 {
		t.Fatalf("%d entries readable, want at least the 200 reported put", hits)
	}
	if st, _ := d.Stats(context.Background()); st.Corrupt != 0 {
		t.Fatalf("%d corrupt entries after kill -9: rename must leave none", st.Corrupt)
	}
}

// TestRedisBackend runs the same contract against a real redis-server.
func TestRedisBackend(t *testing.T) {
	addr := redistest.StartOrSkip(t)
	r, err := OpenRedis("redis://"+addr+"/0", Options{TTL: time.Hour, MaxValueBytes: 4096})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx := context.Background()
	for i := range 20 {
		k, e := entryFor(i, 100)
		if err := r.Put(ctx, k, e); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 20 {
		k, _ := entryFor(i, 0)
		e, ok, err := Lookup(ctx, r, k, "/v1/chat/completions", "m1")
		if !ok || err != nil {
			t.Fatalf("entry %d: hit=%v err=%v", i, ok, err)
		}
		checkEntry(t, i, e)
		if _, ok, _ := Lookup(ctx, r, k, "/v1/chat/completions", "m2"); ok {
			t.Fatal("served for another model")
		}
	}
	k, big := entryFor(99, 5000)
	if err := r.Put(ctx, k, big); err != ErrTooLarge {
		t.Fatalf("oversized value: %v, want ErrTooLarge", err)
	}
	if ttl := r.c.TTL(ctx, redisPrefix+KeyOf("/v1/chat/completions", "m1", []byte("1")).String()).Val(); ttl <= 0 || ttl > time.Hour {
		t.Fatalf("ttl %v, want within 1h", ttl)
	}
	r.c.Set(ctx, redisPrefix+k.String(), "garbage", 0)
	if _, ok, _ := r.Get(ctx, k); ok {
		t.Fatal("a damaged value was served")
	}
	st, err := r.Stats(ctx)
	if err != nil || st.Entries != 21 {
		t.Fatalf("stats %+v %v", st, err)
	}
	r.c.Set(ctx, "other:key", "x", 0)
	if n, err := r.Clear(ctx); n != 21 || err != nil {
		t.Fatalf("clear: %d %v", n, err)
	}
	if r.c.Exists(ctx, "other:key").Val() != 1 {
		t.Fatal("clear removed a key that is not the cache's")
	}
}
