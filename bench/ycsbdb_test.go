package bench

import (
	"context"
	"testing"
)

func TestYCSBRecordRoundTrip(t *testing.T) {
	row := map[string][]byte{"field1": []byte("b"), "field0": []byte("a"), "field2": nil}
	got, err := ycsbDecode(ycsbEncode(nil, row))
	if err != nil || len(got) != len(row) {
		t.Fatalf("decoded %v, %v", got, err)
	}
	for k, v := range row {
		if string(got[k]) != string(v) {
			t.Errorf("%s: %q, want %q", k, got[k], v)
		}
	}
	if _, err := ycsbDecode([]byte{5, 'a'}); err == nil {
		t.Error("truncated record decoded")
	}
}

func TestYCSBScanStopsAtCount(t *testing.T) {
	e, err := NewEngine("mayfly")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Open(t.TempDir(), 1<<20, 10); err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	db := ycsbDB{e}
	ctx := db.InitThread(context.Background(), 0, 1)
	for _, k := range []string{"user1", "user2", "user3", "user4"} {
		if err := db.Insert(ctx, "", k, map[string][]byte{"field0": []byte(k)}); err != nil {
			t.Fatal(err)
		}
	}
	for count, want := range map[int]int{1: 1, 3: 3, 10: 3} {
		rows, err := db.Scan(ctx, "", "user2", count, nil)
		if err != nil || len(rows) != want || string(rows[0]["field0"]) != "user2" {
			t.Errorf("scan of %d from user2: %d rows %v, %v; want %d", count, len(rows), rows, err, want)
		}
	}
	if _, err := db.Read(ctx, "", "user9", nil); err == nil {
		t.Error("read of a missing key succeeded")
	}
}
