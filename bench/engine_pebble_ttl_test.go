package bench

import (
	"testing"
	"time"
)

func TestPebbleTTLOpsExpire(t *testing.T) {
	now := time.UnixMilli(1_000_000)
	e := &pebbleEngine{}
	e.ttl.now = func() time.Time { return now }
	if err := e.Open(t.TempDir(), 1<<20, 10); err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	k := []byte("session")
	if err := e.PutExpiring(k, []byte("v1"), time.Second); err != nil {
		t.Fatal(err)
	}
	if ok, err := e.PutIfAbsent(k, []byte("v2"), time.Second); ok || err != nil {
		t.Fatalf("PutIfAbsent on a live key: %v, %v", ok, err)
	}
	now = now.Add(900 * time.Millisecond)
	if v, ok, err := e.GetEx(k, time.Second, nil); !ok || err != nil || string(v) != "v1" {
		t.Fatalf("GetEx before the deadline: %q, %v, %v", v, ok, err)
	}
	now = now.Add(900 * time.Millisecond) // past the first deadline, not the extended one
	if ok, err := e.Touch(k, time.Second); !ok || err != nil {
		t.Fatalf("Touch after GetEx extended the key: %v, %v", ok, err)
	}
	now = now.Add(time.Second) // exactly at the deadline: expired
	if _, ok, err := e.GetEx(k, time.Second, nil); ok || err != nil {
		t.Fatalf("GetEx of an expired key: %v, %v", ok, err)
	}
	if _, ok, err := e.GetDel(k, nil); ok || err != nil {
		t.Fatalf("GetDel of an expired key: %v, %v", ok, err)
	}
	if ok, err := e.PutIfAbsent(k, []byte("v3"), time.Second); !ok || err != nil {
		t.Fatalf("PutIfAbsent over an expired key: %v, %v", ok, err)
	}
	if v, ok, err := e.GetDel(k, nil); !ok || err != nil || string(v) != "v3" {
		t.Fatalf("GetDel: %q, %v, %v", v, ok, err)
	}
	if _, ok, err := e.GetDel(k, nil); ok || err != nil {
		t.Fatalf("second GetDel: %v, %v", ok, err)
	}
}
