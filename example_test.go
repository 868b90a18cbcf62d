package mayfly_test

import (
	"errors"
	"fmt"
	"log"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/mayflydb/mayfly"
	"github.com/mayflydb/mayfly/clock"
)

// exampleEpoch is the start time of the manual clocks in these examples.
var exampleEpoch = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// A session store: every write without an explicit TTL gets the database's
// DefaultTTL, and a session disappears once its deadline has passed.
func Example() {
	dir, err := os.MkdirTemp("", "mayfly-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	clk := clock.NewManual(exampleEpoch) // use the default system clock in production
	db, err := mayfly.Open(dir, &mayfly.Options{DefaultTTL: 30 * time.Minute, Clock: clk})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	if err := db.Put([]byte("session:42"), []byte(`{"user":"ada"}`)); err != nil {
		log.Fatal(err)
	}
	v, err := db.Get([]byte("session:42"))
	fmt.Printf("%s %v\n", v, err)

	clk.Advance(10 * time.Minute)
	left, expires, err := db.TTL([]byte("session:42"))
	fmt.Println(left, expires, err)

	clk.Advance(20*time.Minute + time.Millisecond) // one millisecond past the deadline
	_, err = db.Get([]byte("session:42"))
	fmt.Println(errors.Is(err, mayfly.ErrNotFound))
	// Output:
	// {"user":"ada"} <nil>
	// 20m0s true <nil>
	// true
}

// A cache: each entry carries its own lifetime with ExpireAfter; entries
// written with NoExpiry stay whatever the clock says.
func Example_cache() {
	dir, err := os.MkdirTemp("", "mayfly-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	clk := clock.NewManual(exampleEpoch)
	db, err := mayfly.Open(dir, &mayfly.Options{Clock: clk})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	db.PutTTL([]byte("weather:paris"), []byte("sunny"), mayfly.ExpireAfter(5*time.Minute))
	db.PutTTL([]byte("weather:oslo"), []byte("snow"), mayfly.ExpireAfter(time.Hour))
	db.PutTTL([]byte("config:units"), []byte("metric"), mayfly.NoExpiry())

	lookup := func(key string) {
		v, err := db.Get([]byte(key))
		if errors.Is(err, mayfly.ErrNotFound) {
			fmt.Printf("%s: miss\n", key)
			return
		}
		fmt.Printf("%s: %s\n", key, v)
	}

	clk.Advance(6 * time.Minute)
	lookup("weather:paris")
	lookup("weather:oslo")
	lookup("config:units")
	// Output:
	// weather:paris: miss
	// weather:oslo: snow
	// config:units: metric
}

// A one-time token valid until a fixed instant. The row is visible while the
// clock reads at or before the deadline and gone one millisecond later.
func ExampleExpireAt() {
	dir, err := os.MkdirTemp("", "mayfly-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	clk := clock.NewManual(exampleEpoch)
	db, err := mayfly.Open(dir, &mayfly.Options{Clock: clk})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	deadline := exampleEpoch.Add(15 * time.Minute)
	if err := db.PutTTL([]byte("otp:ada"), []byte("913204"), mayfly.ExpireAt(deadline)); err != nil {
		log.Fatal(err)
	}

	clk.Set(deadline)
	v, err := db.Get([]byte("otp:ada"))
	fmt.Printf("at the deadline: %s %v\n", v, err)

	clk.Advance(time.Millisecond)
	_, err = db.Get([]byte("otp:ada"))
	fmt.Println("1ms later:", err)

	// Deadlines outside the representable range are rejected up front.
	err = db.PutTTL([]byte("otp:bob"), []byte("1"), mayfly.ExpireAt(time.Time{}))
	fmt.Println(errors.Is(err, mayfly.ErrInvalidTTL))
	// Output:
	// at the deadline: 913204 <nil>
	// 1ms later: mayfly: not found
	// true
}

// A snapshot reads at a fixed sequence number and a fixed clock time: rows
// that expire, and writes that happen, after it was taken do not change what
// it returns.
func ExampleDB_NewSnapshot() {
	dir, err := os.MkdirTemp("", "mayfly-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	clk := clock.NewManual(exampleEpoch)
	db, err := mayfly.Open(dir, &mayfly.Options{Clock: clk})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	db.PutTTL([]byte("lease"), []byte("worker-1"), mayfly.ExpireAfter(time.Minute))

	snap, err := db.NewSnapshot()
	if err != nil {
		log.Fatal(err)
	}
	defer snap.Close()

	clk.Advance(2 * time.Minute)
	db.Put([]byte("new"), []byte("after snapshot"))

	_, err = db.Get([]byte("lease"))
	fmt.Println("db lease:", err)
	v, err := snap.Get([]byte("lease"))
	fmt.Printf("snapshot lease: %s %v\n", v, err)
	left, _, _ := snap.TTL([]byte("lease"))
	fmt.Println("snapshot TTL:", left)
	_, err = snap.Get([]byte("new"))
	fmt.Println("snapshot new:", err)
	// Output:
	// db lease: mayfly: not found
	// snapshot lease: worker-1 <nil>
	// snapshot TTL: 1m0s
	// snapshot new: mayfly: not found
}

// A batch commits atomically; each write in it may carry its own TTL.
func ExampleBatch() {
	dir, err := os.MkdirTemp("", "mayfly-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	clk := clock.NewManual(exampleEpoch)
	db, err := mayfly.Open(dir, &mayfly.Options{DefaultTTL: time.Hour, Clock: clk})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	b := db.NewBatch()
	b.Put([]byte("user:ada"), []byte("Ada"))                                            // DefaultTTL: 1h
	b.PutTTL([]byte("user:ada:otp"), []byte("913204"), mayfly.ExpireAfter(time.Minute)) // 1m
	b.PutTTL([]byte("user:ada:email"), []byte("ada@example.com"), mayfly.NoExpiry())    // forever
	b.Delete([]byte("user:ada:old"))
	if err := b.Write(mayfly.Sync); err != nil {
		log.Fatal(err)
	}
	fmt.Println("wrote", b.Len(), "entries")

	for _, k := range []string{"user:ada", "user:ada:otp", "user:ada:email"} {
		left, expires, err := db.TTL([]byte(k))
		fmt.Println(k, left, expires, err)
	}

	clk.Advance(2 * time.Minute)
	_, err = db.Get([]byte("user:ada:otp"))
	fmt.Println("otp after 2m:", err)
	// Output:
	// wrote 4 entries
	// user:ada 1h0m0s true <nil>
	// user:ada:otp 1m0s true <nil>
	// user:ada:email 0s false <nil>
	// otp after 2m: mayfly: not found
}

// Scan walks the live keys of a range in order with a range-over-func loop;
// expired rows are skipped.
func ExampleDB_Scan() {
	dir, err := os.MkdirTemp("", "mayfly-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	clk := clock.NewManual(exampleEpoch)
	db, err := mayfly.Open(dir, &mayfly.Options{Clock: clk})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	db.Put([]byte("fruit:apple"), []byte("red"))
	db.Put([]byte("fruit:banana"), []byte("yellow"))
	db.PutTTL([]byte("fruit:cherry"), []byte("dark red"), mayfly.ExpireAfter(time.Second))
	db.Put([]byte("fruit:date"), []byte("brown"))
	db.Put([]byte("veg:carrot"), []byte("orange"))
	clk.Advance(2 * time.Second) // the cherry expires

	var scanErr error
	for k, v := range db.Scan([]byte("fruit:"), []byte("fruit;"), &scanErr) {
		fmt.Printf("%s=%s\n", k, v)
	}
	if scanErr != nil {
		log.Fatal(scanErr)
	}
	// Output:
	// fruit:apple=red
	// fruit:banana=yellow
	// fruit:date=brown
}

// A hot read loop reuses one buffer: GetAppend copies each value into it
// instead of allocating a new slice per read.
func ExampleDB_GetAppend() {
	dir, err := os.MkdirTemp("", "mayfly-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	db, err := mayfly.Open(dir, &mayfly.Options{Clock: clock.NewManual(exampleEpoch)})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	for _, k := range []string{"limit:alice", "limit:bob"} {
		if err := db.PutTTL([]byte(k), []byte("100"), mayfly.ExpireAfter(time.Minute)); err != nil {
			log.Fatal(err)
		}
	}
	buf := make([]byte, 0, 64)
	for _, k := range []string{"limit:alice", "limit:bob", "limit:carol"} {
		var err error
		buf, err = db.GetAppend(buf[:0], []byte(k))
		fmt.Printf("%s %q %v\n", k, buf, err)
	}
	// Output:
	// limit:alice "100" <nil>
	// limit:bob "100" <nil>
	// limit:carol "" mayfly: not found
}

// A fixed-window rate limiter: each client may make a few requests per
// minute. The counter for a window lives under "rl:<client>:<window start>"
// and expires at the end of its window, so old windows clean themselves up
// and the next window starts from zero.
//
// Mayfly has no atomic increment, so the read-modify-write is serialised by a
// mutex; as the store is embedded, every caller is in this process.
func Example_rateLimiter() {
	dir, err := os.MkdirTemp("", "mayfly-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	clk := clock.NewManual(exampleEpoch)
	db, err := mayfly.Open(dir, &mayfly.Options{Clock: clk})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	const (
		limit  = 3
		window = time.Minute
	)
	var mu sync.Mutex
	allow := func(client string) (key string, ok bool) {
		mu.Lock()
		defer mu.Unlock()
		start := clk.Now().Truncate(window)
		key = fmt.Sprintf("rl:%s:%d", client, start.Unix())
		n := 0
		switch v, err := db.Get([]byte(key)); {
		case err == nil:
			n, _ = strconv.Atoi(string(v))
		case !errors.Is(err, mayfly.ErrNotFound):
			log.Fatal(err)
		}
		if n >= limit {
			return key, false
		}
		// The deadline is the window's end: the counter is visible for the
		// whole window and gone shortly after it.
		err := db.PutTTL([]byte(key), []byte(strconv.Itoa(n+1)), mayfly.ExpireAt(start.Add(window)))
		if err != nil {
			log.Fatal(err)
		}
		return key, true
	}

	var firstKey string
	for i := range 5 {
		key, ok := allow("alice")
		firstKey = key
		fmt.Printf("%s request %d: allowed=%v\n", clk.Now().UTC().Format("15:04:05"), i+1, ok)
		clk.Advance(10 * time.Second)
	}
	_, ok := allow("bob") // other clients have their own counters
	fmt.Println("bob allowed:", ok)

	clk.Set(exampleEpoch.Add(time.Minute + 5*time.Second)) // the next window
	key, ok := allow("alice")
	fmt.Printf("%s request 6: allowed=%v\n", clk.Now().UTC().Format("15:04:05"), ok)
	fmt.Println("keys:", firstKey, "->", key)
	left, _, _ := db.TTL([]byte(key))
	fmt.Println("new window resets in", left)

	_, err = db.Get([]byte(firstKey)) // expired at the end of its window
	fmt.Println("old window counter:", err)
	// Output:
	// 12:00:00 request 1: allowed=true
	// 12:00:10 request 2: allowed=true
	// 12:00:20 request 3: allowed=true
	// 12:00:30 request 4: allowed=false
	// 12:00:40 request 5: allowed=false
	// bob allowed: true
	// 12:01:05 request 6: allowed=true
	// keys: rl:alice:1767268800 -> rl:alice:1767268860
	// new window resets in 55s
	// old window counter: mayfly: not found
}

// Idempotency keys: a payment API stores each request's result under
// "idem:<request id>" for 24 hours, in the same atomic batch as the result
// itself, so a retried request replays the stored answer instead of charging
// twice. After 24 hours the key is gone; the payment record stays.
func Example_idempotencyKeys() {
	dir, err := os.MkdirTemp("", "mayfly-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	clk := clock.NewManual(exampleEpoch)
	db, err := mayfly.Open(dir, &mayfly.Options{Clock: clk})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	charges := 0
	var mu sync.Mutex // one request per id at a time
	charge := func(requestID, amount string) string {
		mu.Lock()
		defer mu.Unlock()
		idem := []byte("idem:" + requestID)
		if v, err := db.Get(idem); err == nil {
			return string(v) + " (replayed)"
		} else if !errors.Is(err, mayfly.ErrNotFound) {
			log.Fatal(err)
		}
		charges++
		id := fmt.Sprintf("ch_%d", charges)
		result := id + " " + amount + " ok"
		b := db.NewBatch()
		b.PutTTL([]byte("charge:"+id), []byte(amount), mayfly.NoExpiry())
		b.PutTTL(idem, []byte(result), mayfly.ExpireAfter(24*time.Hour))
		if err := b.Write(mayfly.Sync); err != nil { // both or neither
			log.Fatal(err)
		}
		return result
	}

	fmt.Println(charge("req-7f3a", "$20"))
	clk.Advance(time.Minute)
	fmt.Println(charge("req-7f3a", "$20")) // the client retried
	fmt.Println(charge("req-91c0", "$5"))  // a different request
	left, _, _ := db.TTL([]byte("idem:req-7f3a"))
	fmt.Println("idem:req-7f3a kept for", left)

	clk.Advance(24 * time.Hour)
	_, err = db.Get([]byte("idem:req-7f3a"))
	fmt.Println("after 24h:", err)
	v, err := db.Get([]byte("charge:ch_1"))
	fmt.Printf("charge:ch_1 = %s %v\n", v, err)
	fmt.Println("charges made:", charges)
	// Output:
	// ch_1 $20 ok
	// ch_1 $20 ok (replayed)
	// ch_2 $5 ok
	// idem:req-7f3a kept for 23h59m0s
	// after 24h: mayfly: not found
	// charge:ch_1 = $20 <nil>
	// charges made: 2
}

// A lease: the holder of "lease:job42" owns the job while the row lives. The
// holder renews it by writing it again with a fresh TTL before it runs out;
// if the holder stops (crashes, hangs), the row expires and another worker
// can take it over.
func Example_leaseRenewal() {
	dir, err := os.MkdirTemp("", "mayfly-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	clk := clock.NewManual(exampleEpoch)
	db, err := mayfly.Open(dir, &mayfly.Options{Clock: clk})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	const leaseTTL = 10 * time.Second
	key := []byte("lease:job42")
	var mu sync.Mutex // makes check-then-write atomic between workers

	// acquire takes the lease if it is free or already ours (which renews it).
	acquire := func(owner string) bool {
		mu.Lock()
		defer mu.Unlock()
		v, err := db.Get(key)
		switch {
		case err == nil && string(v) != owner:
			left, _, _ := db.TTL(key)
			fmt.Printf("  %s: held by %s for %v more\n", owner, v, left)
			return false
		case err != nil && !errors.Is(err, mayfly.ErrNotFound):
			log.Fatal(err)
		}
		if err := db.PutWith(key, []byte(owner), mayfly.ExpireAfter(leaseTTL), mayfly.Sync); err != nil {
			log.Fatal(err)
		}
		return true
	}
	// renew extends the lease if owner still holds it and it has not run out.
	renew := func(owner string) bool {
		mu.Lock()
		left, _, err := db.TTL(key)
		v, _ := db.Get(key)
		mu.Unlock()
		if err != nil || string(v) != owner {
			fmt.Printf("  %s: lease lost\n", owner)
			return false
		}
		fmt.Printf("  %s: %v left, renewing\n", owner, left)
		return acquire(owner)
	}
	at := func() string { return clk.Now().Sub(exampleEpoch).String() }

	fmt.Println(at(), "A acquires:", acquire("A"))
	fmt.Println(at(), "B acquires:", acquire("B"))

	clk.Advance(7 * time.Second)
	fmt.Println(at(), "A renews:", renew("A"))

	clk.Advance(8 * time.Second) // past the first deadline, within the renewed one
	fmt.Println(at(), "B acquires:", acquire("B"))

	// A stops renewing; the renewed lease ends 10s after the renewal.
	clk.Advance(2*time.Second + time.Millisecond)
	fmt.Println(at(), "B acquires:", acquire("B"))
	fmt.Println(at(), "A renews:", renew("A"))
	v, _ := db.Get(key)
	left, _, _ := db.TTL(key)
	fmt.Printf("%s holder %s, %v left\n", at(), v, left)
	// Output:
	// 0s A acquires: true
	//   B: held by A for 10s more
	// 0s B acquires: false
	//   A: 3s left, renewing
	// 7s A renews: true
	//   B: held by A for 2s more
	// 15s B acquires: false
	// 17.001s B acquires: true
	//   A: lease lost
	// 17.001s A renews: false
	// 17.001s holder B, 10s left
}
