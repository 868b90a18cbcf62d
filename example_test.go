package mayfly_test

import (
	"errors"
	"fmt"
	"log"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
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

// Sessions with a sliding expiry: every request reads the session with
// GetEx, which pushes its deadline 30 minutes past the request without
// writing the value again. Requests closer together than the touch window
// (1 s by default) write nothing at all.
func Example_sessionStore() {
	dir, err := os.MkdirTemp("", "mayfly-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	clk := clock.NewManual(exampleEpoch)
	db, err := mayfly.Open(dir, &mayfly.Options{Clock: clk, DefaultTTL: 30 * time.Minute})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	if err := db.Put([]byte("session:9f2c"), []byte(`{"user":"ada"}`)); err != nil {
		log.Fatal(err)
	}
	request := func() {
		v, err := db.GetEx([]byte("session:9f2c"), mayfly.ExpireAfter(30*time.Minute))
		if err != nil {
			fmt.Println("session:", err)
			return
		}
		at, _, _ := db.ExpireTime([]byte("session:9f2c"))
		fmt.Printf("%s %s, expires %s\n", clk.Now().UTC().Format("15:04:05.0"), v, at.UTC().Format("15:04:05.0"))
	}
	clk.Advance(20 * time.Minute)
	request() // slides the deadline to 30 minutes from now
	for range 5 {
		clk.Advance(100 * time.Millisecond)
		request() // within the touch window: nothing written
	}
	fmt.Println("touches that wrote nothing:", db.Metrics().TouchesCoalesced)
	clk.Advance(29 * time.Minute)
	request() // still live, though the first deadline (12:30) has passed
	clk.Advance(31 * time.Minute)
	request() // idle for 31 minutes: gone
	// Output:
	// 12:20:00.0 {"user":"ada"}, expires 12:50:00.0
	// 12:20:00.1 {"user":"ada"}, expires 12:50:00.0
	// 12:20:00.2 {"user":"ada"}, expires 12:50:00.0
	// 12:20:00.3 {"user":"ada"}, expires 12:50:00.0
	// 12:20:00.4 {"user":"ada"}, expires 12:50:00.0
	// 12:20:00.5 {"user":"ada"}, expires 12:50:00.0
	// touches that wrote nothing: 5
	// 12:49:00.5 {"user":"ada"}, expires 13:19:00.5
	// session: mayfly: not found
}

// Idempotency keys: a payment API records each request ID with PutIfAbsent
// before charging, so of a request and its retries (even concurrent ones)
// exactly one charges; the others find the ID taken and replay the stored
// result. The ID expires after 24 hours; the payment record stays. The
// conditional write and the charge are one batch, written with Sync.
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

	var charges atomic.Int64
	charge := func(requestID, amount string) string {
		idem := []byte("idem:" + requestID)
		id := fmt.Sprintf("ch_%s", requestID)
		result := id + " " + amount + " ok"
		b := db.NewBatch()
		defer b.Close()
		b.PutIfAbsent(idem, []byte(result), mayfly.ExpireAfter(24*time.Hour))
		b.PutTTL([]byte("charge:"+id), []byte(amount), mayfly.NoExpiry())
		switch err := b.Write(mayfly.Sync); {
		case errors.Is(err, mayfly.ErrConditionFailed): // seen before
			v, err := db.Get(idem)
			if err != nil {
				log.Fatal(err)
			}
			return string(v) + " (replayed)"
		case err != nil:
			log.Fatal(err)
		}
		charges.Add(1)
		return result
	}

	// A request and two retries race; one charges.
	var wg sync.WaitGroup
	results := make([]string, 3)
	for i := range results {
		wg.Go(func() { results[i] = charge("req-7f3a", "$20") })
	}
	wg.Wait()
	fmt.Println("charges after 3 racing attempts:", charges.Load())
	clk.Advance(time.Minute)
	fmt.Println(charge("req-7f3a", "$20")) // a later retry
	fmt.Println(charge("req-91c0", "$5"))  // a different request
	left, _, _ := db.TTL([]byte("idem:req-7f3a"))
	fmt.Println("idem:req-7f3a kept for", left)

	clk.Advance(24 * time.Hour)
	_, err = db.Get([]byte("idem:req-7f3a"))
	fmt.Println("after 24h:", err)
	v, err := db.Get([]byte("charge:ch_req-7f3a"))
	fmt.Printf("charge:ch_req-7f3a = %s %v\n", v, err)
	// Output:
	// charges after 3 racing attempts: 1
	// ch_req-7f3a $20 ok (replayed)
	// ch_req-91c0 $5 ok
	// idem:req-7f3a kept for 23h59m0s
	// after 24h: mayfly: not found
	// charge:ch_req-7f3a = $20 <nil>
}

// One-time tokens: a password-reset link carries a token stored for 15
// minutes; GetDel takes it and deletes it in one step, so of two clicks
// racing on the link exactly one gets it.
func Example_oneTimeTokens() {
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

	if err := db.PutTTL([]byte("reset:tok-81f2"), []byte("user:ada"), mayfly.ExpireAfter(15*time.Minute)); err != nil {
		log.Fatal(err)
	}
	var wg sync.WaitGroup
	var used atomic.Int64
	for range 2 { // a double click
		wg.Go(func() {
			if _, err := db.GetDel([]byte("reset:tok-81f2")); err == nil {
				used.Add(1)
			} else if !errors.Is(err, mayfly.ErrNotFound) {
				log.Fatal(err)
			}
		})
	}
	wg.Wait()
	fmt.Println("resets done:", used.Load())
	_, err = db.GetDel([]byte("reset:tok-81f2"))
	fmt.Println("third use:", err)

	// A token not used in time is gone too.
	db.PutTTL([]byte("reset:tok-93aa"), []byte("user:bob"), mayfly.ExpireAfter(15*time.Minute))
	clk.Advance(15*time.Minute + time.Millisecond)
	_, err = db.GetDel([]byte("reset:tok-93aa"))
	fmt.Println("after 15m:", err)
	// Output:
	// resets done: 1
	// third use: mayfly: not found
	// after 15m: mayfly: not found
}

// A lock with a lease and a fencing token: a worker holds "lease:job42"
// while the lease lives and renews it before it runs out; if it stops, the
// lease expires and another worker acquires it, with a larger token. The
// storage the job writes to remembers the largest token it has seen and
// refuses writes with a smaller one, so a stalled former holder that wakes
// up cannot overwrite the new holder's work.
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

	const ttl = 10 * time.Second
	key := []byte("lease:job42")
	highest := uint64(0) // the fenced storage's largest token seen
	write := func(l mayfly.Lease, what string) {
		if l.Token < highest {
			fmt.Printf("  storage refuses %s's write: token is stale\n", l.Holder)
			return
		}
		highest = l.Token
		fmt.Printf("  storage accepts %s's write: %s\n", l.Holder, what)
	}
	at := func() string { return clk.Now().Sub(exampleEpoch).String() }

	a, ok, err := db.AcquireLease(key, []byte("A"), ttl)
	fmt.Println(at(), "A acquires:", ok, err)
	_, ok, _ = db.AcquireLease(key, []byte("B"), ttl)
	fmt.Println(at(), "B acquires:", ok)
	write(a, "step 1")

	clk.Advance(7 * time.Second)
	a, ok, _ = db.RenewLease(a, ttl)
	fmt.Println(at(), "A renews:", ok, "until +"+a.Deadline.Sub(exampleEpoch).String())

	// A stalls (a long GC pause, say) past its deadline; B takes over.
	clk.Advance(ttl + time.Millisecond)
	b, ok, _ := db.AcquireLease(key, []byte("B"), ttl)
	fmt.Println(at(), "B acquires:", ok, "token above A's:", b.Token > a.Token)
	write(b, "step 1 again")
	write(a, "step 2") // A wakes up, still thinking it holds the lease
	_, ok, _ = db.RenewLease(a, ttl)
	fmt.Println(at(), "A renews:", ok)
	ok, _ = db.ReleaseLease(b)
	fmt.Println(at(), "B releases:", ok)
	// Output:
	// 0s A acquires: true <nil>
	// 0s B acquires: false
	//   storage accepts A's write: step 1
	// 7s A renews: true until +17s
	// 17.001s B acquires: true token above A's: true
	//   storage accepts B's write: step 1 again
	//   storage refuses A's write: token is stale
	// 17.001s A renews: false
	// 17.001s B releases: true
}

// A rate limit of 3 requests per minute per client: FixedWindow counts
// with one Add, and the window's deadline is fixed by its first request.
func ExampleFixedWindow() {
	dir, err := os.MkdirTemp("", "mayfly-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	clk := clock.NewManual(exampleEpoch)
	db, err := mayfly.Open(dir, &mayfly.Options{MergeOperator: mayfly.Int64Add, Clock: clk})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	for i := range 5 {
		ok, n, err := mayfly.FixedWindow(db, []byte("ratelimit:ada"), 3, time.Minute)
		fmt.Println(i, ok, n, err)
		clk.Advance(10 * time.Second)
	}
	clk.Advance(20 * time.Second) // the window started a minute ago ends
	ok, n, err := mayfly.FixedWindow(db, []byte("ratelimit:ada"), 3, time.Minute)
	fmt.Println("next window:", ok, n, err)
	// Output:
	// 0 true 1 <nil>
	// 1 true 2 <nil>
	// 2 true 3 <nil>
	// 3 false 4 <nil>
	// 4 false 5 <nil>
	// next window: true 1 <nil>
}

// Counters: Add returns the new count; Merge counts blind (a metric).
func ExampleDB_Add() {
	dir, err := os.MkdirTemp("", "mayfly-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	db, err := mayfly.Open(dir, &mayfly.Options{MergeOperator: mayfly.Int64Add})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	if err := db.Merge([]byte("hits"), mayfly.EncodeInt64(40), mayfly.NoExpiry()); err != nil {
		log.Fatal(err)
	}
	n, err := db.Add([]byte("hits"), 2, mayfly.NoExpiry())
	fmt.Println(n, err)
	v, _ := db.Get([]byte("hits"))
	fmt.Println(mayfly.DecodeInt64(v))
	// Output:
	// 42 <nil>
	// 42 true
}
