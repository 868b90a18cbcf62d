package mayfly_test

import (
	"errors"
	"fmt"
	"log"
	"os"
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
